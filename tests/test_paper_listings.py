"""The two listings of the PyTorch paper (Paszke et al., NeurIPS 2019), run as printed with
only the import changed: Listing 1 (a custom LinearLayer module inside a conv net ending
in softmax) and Listing 2 (a GAN step: two models, two Adam optimizers, detach(), two
backward passes). Each listing's text is exec'd verbatim in a namespace whose `torch` is
pytorchlite; where torch is installed the same text runs under torch too and both agree.

examples/train_digits.py (Listing 1's shape, trained) and examples/gan.py (Listing 2 on a
2-D distribution) run them at scale."""

import textwrap

import numpy as np
import pytest

import pytorchlite

IMPORTS_PTL = "import pytorchlite as torch\nimport pytorchlite.nn as nn\nfrom pytorchlite.nn import Module\n" \
              "import pytorchlite.optim as optim\n"
IMPORTS_TORCH = "import torch\nimport torch.nn as nn\nfrom torch.nn import Module\nimport torch.optim as optim\n"

LISTING_1 = textwrap.dedent("""
    class LinearLayer(Module):
        def __init__(self, in_sz, out_sz):
            super().__init__()
            t1 = torch.randn(in_sz, out_sz)
            self.w = nn.Parameter(t1)
            t2 = torch.randn(out_sz)
            self.b = nn.Parameter(t2)

        def forward(self, activations):
            t = torch.mm(activations, self.w)
            return t + self.b

    class FullBasicModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 128, 3)
            self.fc = LinearLayer(128, 10)

        def forward(self, x):
            t1 = self.conv(x)
            t2 = nn.functional.relu(t1)
            t3 = self.fc(t1)
            return nn.functional.softmax(t3)
""")

LISTING_2 = textwrap.dedent("""
    discriminator = create_discriminator()
    generator = create_generator()
    optimD = optim.Adam(discriminator.parameters())
    optimG = optim.Adam(generator.parameters())

    def step(real_sample):
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
""")


def _namespace(imports):
    ns = {}
    exec(imports, ns)
    return ns


def test_listing_1_defines_and_registers_as_printed():
    ns = _namespace(IMPORTS_PTL)
    exec(LISTING_1, ns)
    torch = ns["torch"]
    torch.manual_seed(0)
    model = ns["FullBasicModel"]()
    assert [n for n, _ in model.named_parameters()] == ["conv.weight", "conv.bias", "fc.w", "fc.b"]
    assert model.fc.w.shape == (128, 10) and model.conv.weight.shape == (128, 1, 3, 3)
    # the hand-written layer is a Module of its own: a batch of 128-vectors through it
    out = model.fc(torch.randn(4, 128))
    assert out.shape == (4, 10) and out.grad_fn is not None


def test_listing_1_forward_fails_as_printed_exactly_as_pytorch_does():
    # As printed, forward feeds the 4-d conv output to torch.mm, which PyTorch refuses:
    # pytorchlite refuses it with the same error rather than guessing a flatten.
    ns = _namespace(IMPORTS_PTL)
    exec(LISTING_1, ns)
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        ns["FullBasicModel"]()(ns["torch"].randn(2, 1, 3, 3))
    torch = pytest.importorskip("torch")
    tns = _namespace(IMPORTS_TORCH)
    exec(LISTING_1, tns)
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        tns["FullBasicModel"]()(torch.randn(2, 1, 3, 3))


def test_listing_1_trains_with_the_conv_output_flattened():
    # the intended model: a 3x3 input gives a 1x1 conv output, so flattening it makes the
    # listing's shapes meet; softmax without dim warns as in PyTorch and picks dim 1
    ns = _namespace(IMPORTS_PTL)
    exec(LISTING_1.replace("self.fc(t1)", "self.fc(t2.flatten(1))"), ns)
    torch = ns["torch"]
    torch.manual_seed(0)
    model = ns["FullBasicModel"]()
    x = torch.randn(16, 1, 3, 3)
    y = torch.randint(0, 10, (16,))
    opt = ns["optim"].SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
            p = model(x)
        loss = -p[torch.arange(16), y].log().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(p.detach().sum(1).numpy(), np.ones(16), rtol=1e-5)
    assert losses[-1] < 0.5 * losses[0]


def _gan_namespace(imports, seed=0):
    """Listing 2's free names: two small MLPs, a BCE loss, labels, noise, real samples."""
    ns = _namespace(imports)
    torch, nn = ns["torch"], ns["nn"]
    rng = np.random.default_rng(seed)

    def linear(i, o):
        layer = nn.Linear(i, o)
        with torch.no_grad():
            layer.weight.copy_(torch.tensor(rng.standard_normal((o, i)) / np.sqrt(i)))
            layer.bias.zero_()
        return layer

    def bce(p, target):
        return -(target * p.log() + (1 - target) * (1 - p).log()).mean()

    noise = torch.tensor(rng.standard_normal((64, 4)))
    ns.update(
        create_discriminator=lambda: nn.Sequential(linear(2, 16), nn.ReLU(), linear(16, 1), nn.Sigmoid()).double(),
        create_generator=lambda: nn.Sequential(linear(4, 16), nn.ReLU(), linear(16, 2)).double(),
        loss=bce, real_label=torch.ones(64, 1, dtype=torch.float64),
        fake_label=torch.zeros(64, 1, dtype=torch.float64), get_noise=lambda: noise)
    real = torch.tensor(rng.standard_normal((64, 2)) * 0.1 + np.array([2.0, -1.0]))
    return ns, real


def _run_listing_2(imports, steps=3):
    ns, real = _gan_namespace(imports)
    exec(LISTING_2, ns)
    d, g = ns["discriminator"], ns["generator"]
    before = [p.detach().clone() for p in list(d.parameters()) + list(g.parameters())]
    for _ in range(steps):
        ns["optimD"].zero_grad()
        ns["optimG"].zero_grad()
        ns["step"](real)
    after = [p.detach() for p in list(d.parameters()) + list(g.parameters())]
    return before, after, ns


def test_listing_2_runs_as_printed_and_updates_both_models():
    before, after, ns = _run_listing_2(IMPORTS_PTL)
    assert all(not np.array_equal(b.numpy(), a.numpy()) for b, a in zip(before, after))
    # fake.detach(): errD_fake's backward reached no generator parameter; errG's did
    assert all(p.grad is not None for p in ns["generator"].parameters())


def test_listing_2_matches_pytorch_step_for_step():
    pytest.importorskip("torch")
    _, ours, _ = _run_listing_2(IMPORTS_PTL)
    _, theirs, _ = _run_listing_2(IMPORTS_TORCH)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)


def test_listing_2_detach_keeps_the_discriminator_step_off_the_generator():
    ns, real = _gan_namespace(IMPORTS_PTL)
    exec(LISTING_2, ns)
    g = ns["generator"]
    fake = g(ns["get_noise"]())
    ns["loss"](ns["discriminator"](fake.detach()), ns["fake_label"]).backward()
    assert all(p.grad is None for p in g.parameters())
    assert isinstance(fake.detach(), pytorchlite.Tensor) and not fake.detach().requires_grad
