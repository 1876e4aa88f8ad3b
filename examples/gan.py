"""A GAN on a toy 2-D distribution, written around Listing 2 of the PyTorch paper
(Paszke et al., 2019, "PyTorch: An Imperative Style, High-Performance Deep Learning
Library"): the training step below is the paper's, nearly verbatim.

The data is a ring of 8 Gaussians (radius 2, standard deviation 0.05). The generator maps
2-D Gaussian noise to the plane, the discriminator the plane to a probability of being
real; both are small MLPs built from nn.Sequential, Linear, ReLU and Sigmoid. The loss is
binary cross-entropy, written here from elementary ops.

    python examples/gan.py [--steps 2000] [--batch-size 128] [--seed 0] [--out examples/out]

Every `--log-every` steps it prints how far the generated samples are from the data: the
mean distance from a generated sample to its nearest mode, the share of samples within 3
standard deviations of a mode, and how many of the 8 modes receive at least 2% of the
samples. At the end it writes a PNG of real against generated samples.
"""

import argparse
import math
import os
import time

import pytorchlite as torch
import pytorchlite.nn as nn
import pytorchlite.optim as optim

N_MODES = 8
RADIUS = 2.0
STD = 0.05
NOISE_DIM = 2
MODES = torch.tensor([[RADIUS * math.cos(2 * math.pi * k / N_MODES), RADIUS * math.sin(2 * math.pi * k / N_MODES)]
                      for k in range(N_MODES)])


def sample_real(n):
    """n points of the ring of Gaussians."""
    which = torch.randint(0, N_MODES, (n,))
    return MODES[which] + STD * torch.randn(n, 2)


class BCELoss(nn.Module):
    """-[y log p + (1 - y) log(1 - p)], averaged. The probabilities are clamped away from 0
    before the log, so a saturated discriminator gives a large finite loss and a zero
    gradient instead of inf and nan."""

    def forward(self, p, target):
        eps = 1e-12
        return -(target * p.clamp(min=eps).log() + (1 - target) * (1 - p).clamp(min=eps).log()).mean()


def create_generator(hidden=64):
    return nn.Sequential(nn.Linear(NOISE_DIM, hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 2))


def create_discriminator(hidden=64):
    return nn.Sequential(nn.Linear(2, hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 1), nn.Sigmoid())


def mode_statistics(samples):
    """(mean distance to the nearest mode, share of samples within 3 std of a mode, number
    of modes that get at least 2% of the samples)."""
    d = ((samples[:, None, :] - MODES[None, :, :]) ** 2).sum(-1).sqrt()     # (n, modes)
    nearest, which = d.min(1)
    close = nearest < 3 * STD
    counts = torch.bincount(which[close], minlength=N_MODES)
    covered = int((counts >= 0.02 * len(samples)).sum().item())
    return nearest.mean().item(), close.float().mean().item(), covered


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    # Adam's beta1 at 0.5, as DCGAN (Radford et al., 2016) does: with the default 0.9 the
    # momentum keeps carrying the generator past the modes, and it hops from one to another
    p.add_argument("--beta1", type=float, default=0.5)
    p.add_argument("--log-every", type=int, default=250)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1: the ops are small)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    p.add_argument("--no-plot", dest="plot", action="store_false")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    # ---- Listing 2 of the paper, with its free names defined -------------------------------
    discriminator = create_discriminator(args.hidden)
    generator = create_generator(args.hidden)
    optimD = optim.Adam(discriminator.parameters(), lr=args.lr, betas=(args.beta1, 0.999))
    optimG = optim.Adam(generator.parameters(), lr=args.lr, betas=(args.beta1, 0.999))
    loss = BCELoss()
    real_label = torch.ones(args.batch_size, 1)
    fake_label = torch.zeros(args.batch_size, 1)

    def get_noise():
        return torch.randn(args.batch_size, NOISE_DIM)

    def step(real_sample):
        # Not in the listing, which shows one step: gradients accumulate, so a loop clears
        # them first. Both are needed: errG.backward() (at the end of the previous step)
        # also leaves gradients in the discriminator's parameters.
        optimD.zero_grad()
        optimG.zero_grad()
        # (1) Update Discriminator
        errD_real = loss(discriminator(real_sample), real_label)
        errD_real.backward()
        fake = generator(get_noise())
        errD_fake = loss(discriminator(fake.detach()), fake_label)
        errD_fake.backward()
        optimD.step()
        # (2) Update Generator
        errG = loss(discriminator(fake), real_label)
        errG.backward()
        optimG.step()
        return errD_real.item() + errD_fake.item(), errG.item()
    # -----------------------------------------------------------------------------------------

    probe = torch.randn(2000, NOISE_DIM)      # the same noise for every measurement

    def measure():
        with torch.no_grad():
            return mode_statistics(generator(probe))

    history = [(0, *measure())]
    print(f"step {0:5d}                          mean distance to nearest mode {history[0][1]:.3f}  "
          f"within 3 std {history[0][2]:6.1%}  modes covered {history[0][3]}/{N_MODES}")
    start = time.perf_counter()
    for i in range(1, args.steps + 1):
        errD, errG = step(sample_real(args.batch_size))
        if i % args.log_every == 0 or i == args.steps:
            history.append((i, *measure()))
            _, dist, close, covered = history[-1]
            print(f"step {i:5d}  loss D {errD:.3f}  G {errG:.3f}  mean distance to nearest mode {dist:.3f}  "
                  f"within 3 std {close:6.1%}  modes covered {covered}/{N_MODES}", flush=True)
    print(f"{args.steps} steps in {time.perf_counter() - start:.1f} s")

    if args.plot:
        plot(generator, probe, os.path.join(args.out, "gan_samples.png"), history[-1])
    return history


def plot(generator, noise, path, last):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no PNG (pip install matplotlib)")
        return
    with torch.no_grad():
        fake = generator(noise).numpy()
    real = sample_real(len(fake)).numpy()
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(real[:, 0], real[:, 1], s=4, alpha=0.4, label="real")
    ax.scatter(fake[:, 0], fake[:, 1], s=4, alpha=0.4, label="generated")
    ax.set_xlim(-3, 3)
    ax.set_ylim(-3, 3)
    ax.set_aspect("equal")
    ax.legend(loc="upper right")
    ax.set_title(f"step {last[0]}: {last[3]}/{N_MODES} modes, {last[2]:.0%} of samples within 3 std")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"real vs generated samples written to {path}")


if __name__ == "__main__":
    main()
