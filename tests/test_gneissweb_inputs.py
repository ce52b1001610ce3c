"""Bad inputs to the GneissWeb library raise with a message, never a silent
wrong answer."""

import numpy as np
import pytest

from iclr26 import gneissweb as gw


def test_remove_repeats_refuses_a_single_string():
    # a str is a sequence of characters: it must not be read as one document
    # per character
    with pytest.raises(TypeError, match="sequence of str"):
        gw.remove_repeats("abcabc", 2)
    with pytest.raises(TypeError, match="sequence of str"):
        gw.dedup_docs("abcabc", 2)
    with pytest.raises(ValueError, match="L must be"):
        gw.remove_repeats(["abcabc"], 0)
    out, frac = gw.remove_repeats(["abcabc"], 3)
    assert out == ["abc"] and frac == pytest.approx(0.5)


def test_fasttext_fit_refuses_float_labels_and_empty_input():
    clf = gw.HashedFastText(2, buckets=64)
    with pytest.raises(TypeError, match="integer class ids"):
        clf.fit(["a b", "c d"], [0.0, 0.7])
    with pytest.raises(ValueError, match="non-empty"):
        clf.fit([], [])
    with pytest.raises(TypeError, match="not one str"):
        clf.fit("a b", [0])
    with pytest.raises(ValueError, match="labels must lie"):
        clf.fit(["a", "b"], [0, 2])
    clf.fit(["a b", "c d"], np.array([True, False]), epochs=1)  # bools are class ids


def test_fasttext_fit_uses_torch_adam_and_learns():
    texts = ["good clean prose here"] * 20 + ["spam spam buy now"] * 20
    clf = gw.HashedFastText(2, buckets=256).fit(texts, [1] * 20 + [0] * 20, epochs=10)
    p = clf.predict_proba(["good clean prose here", "spam spam buy now"])[:, 1]
    assert p[0] > 0.9 and p[1] < 0.1


def test_cloze_refuses_empty_options_and_bad_answers():
    model = gw.CharMLP(context=4, emb=2, hidden=4)
    with pytest.raises(ValueError, match="options must be non-empty"):
        gw.continuation_logprob(model, "the ", [])
    with pytest.raises(ValueError, match="non-empty str"):
        gw.continuation_logprob(model, "the ", ["a", ""])
    with pytest.raises(ValueError, match="answer must be an int index"):
        gw.cloze_accuracy(model, [("the ", ["a", "b"], 2)])
    with pytest.raises(ValueError, match="answer must be an int index"):
        gw.cloze_scores(model, [("the ", [], 0)])
    with pytest.raises(ValueError, match="non-empty list"):
        gw.cloze_scores(model, [])
    s = gw.cloze_scores(model, [("the ", ["a", "b"], 1), ("x", ["c", "d", "e"], 0)])
    assert s.shape == (2,) and np.all((s > 0) & (s < 1))


def test_paired_lower_bound():
    d = np.array([0.1, 0.3, 0.2, 0.2])
    expect = d.mean() - 2.326 * d.std(ddof=1) / 2
    assert gw.paired_lower_bound(d) == pytest.approx(expect)
    with pytest.raises(ValueError):
        gw.paired_lower_bound([0.1])
    with pytest.raises(ValueError):
        gw.paired_lower_bound([0.1, np.nan])
    with pytest.raises(ValueError):
        gw.paired_lower_bound([0.1, 0.2], z=0)


def test_cloze_items_four_templates_unique_answers():
    facts = gw.make_fact_table(8, 0)
    items = gw.cloze_items(facts, 4, seed=0)
    assert len(items) == 4 * 8
    for _, opts, a in items:
        assert len(set(opts)) == 4 and 0 <= a < 4
    with pytest.raises(ValueError, match="templates"):
        gw.cloze_items(facts, 4, templates=())


def test_char_lm_cosine_schedule_reaches_zero():
    # torch.optim.Adam with a cosine LambdaLR: the last step uses a rate near 0
    model = gw.train_char_lm(
        "abcdefgh" * 20, steps=5, batch=8, context=4, emb=2, hidden=4
    )
    assert isinstance(model, gw.CharMLP)
    with pytest.raises(ValueError):
        gw.train_char_lm("abcdefgh" * 20, steps=0, context=4)
