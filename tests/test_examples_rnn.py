"""examples/char_lstm.py: the character-level LSTM language model trains (its loss falls)
and samples text, run with tiny settings through its main(argv)."""

import math

from examples_util import load_example


def test_char_lstm_loss_falls_and_it_samples(capsys):
    mod = load_example("char_lstm")
    losses = mod.main(["--epochs", "3", "--steps", "8", "--batch-size", "8", "--seq-len", "24",
                       "--hidden-size", "48", "--sample-length", "40", "--prompt", "When "])
    out = capsys.readouterr().out
    vocab = len(mod.Vocabulary(mod.load_text()))
    assert len(losses) == 3 and out.count("loss ") == 3
    # starts near a uniform guess, ends clearly below it, falling every epoch
    assert abs(losses[0] - math.log(vocab)) < 1.0, losses
    assert losses[0] > losses[1] > losses[2], losses
    assert losses[-1] < losses[0] - 0.4, losses
    sampled = out.split("--- sample ---\n", 1)[1]
    assert sampled.startswith("When ") and len(sampled.rstrip("\n")) == len("When ") + 40


def test_training_text_is_the_sonnets_without_header():
    mod = load_example("char_lstm")
    text = mod.load_text()
    assert "#" not in text and text.startswith("I\n")
    assert "Shall I compare thee to a summer's day?" in text
    assert 10_000 < len(text) < 50_000
    vocab = mod.Vocabulary(text)
    assert vocab.decode(vocab.encode("Love's not Time's fool").tolist()) == "Love's not Time's fool"


def test_stacked_model_with_dropout_shapes():
    mod = load_example("char_lstm")
    import pytorchlite
    model = mod.CharLSTM(20, embed_dim=8, hidden_size=12, num_layers=2, dropout=0.3)
    logits, (h, c) = model(pytorchlite.randint(0, 20, (3, 7)))
    assert tuple(logits.shape) == (3, 7, 20) and tuple(h.shape) == (2, 3, 12) and tuple(c.shape) == (2, 3, 12)
