"""Index bounds are checked on the device the way eager checks them: an error, not a value.

gather (and cross_entropy, which Dynamo decomposes into a gather of the labels) reads its
elements by an indirect DMA gather from the input flattened, where an index outside the
gathered dimension could land in another row; the importer first reads the indices through
an indirect DMA gather from a table of that dimension's size, which validates each one."""

import pytest
import torch
import torch.nn.functional as F

import neuronsim


def _compiled(fn):
    return torch.compile(fn, backend="neuron", dynamic=False)


def test_gather_in_range_matches_eager_and_out_of_range_raises():
    x = torch.randn(3, 4)
    gather = _compiled(lambda x, i: torch.gather(x, 1, i))
    good = torch.tensor([[0], [3], [1]])
    assert torch.equal(gather(x, good), torch.gather(x, 1, good))
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.gather(x, 1, torch.tensor([[0], [4], [1]]))  # eager raises too
    with pytest.raises(neuronsim.NeuronRuntimeError, match=r"index 4 .*outside the table's 4 rows \(from aten\.gather"):
        gather(x, torch.tensor([[0], [4], [1]]))
    with pytest.raises(neuronsim.NeuronRuntimeError, match=r"index -1 .*outside"):
        gather(x, torch.tensor([[0], [-1], [1]]))


def test_cross_entropy_label_past_the_classes_raises():
    logits = torch.randn(5, 7)
    loss = _compiled(lambda x, y: F.cross_entropy(x, y))
    labels = torch.tensor([0, 6, 3, 1, 2])
    torch.testing.assert_close(loss(logits, labels), F.cross_entropy(logits, labels), rtol=1e-5, atol=1e-6)
    # ignore_index (-100) stays valid
    ignored = torch.tensor([0, -100, 3, 1, -100])
    torch.testing.assert_close(loss(logits, ignored), F.cross_entropy(logits, ignored), rtol=1e-5, atol=1e-6)
    with pytest.raises(IndexError):
        F.cross_entropy(logits, torch.tensor([0, 7, 3, 1, 2]))
    with pytest.raises(neuronsim.NeuronRuntimeError, match=r"index 7 .*outside the table's 7 rows"):
        loss(logits, torch.tensor([0, 7, 3, 1, 2]))


def test_cross_entropy_backward_with_checked_labels():
    logits = torch.randn(6, 5, requires_grad=True)
    labels = torch.tensor([4, 0, 1, 2, 3, 4])
    step = _compiled(lambda x, y: F.cross_entropy(x, y))
    step(logits, labels).backward()
    got = logits.grad.clone()
    logits.grad = None
    F.cross_entropy(logits, labels).backward()
    torch.testing.assert_close(got, logits.grad, rtol=1e-5, atol=1e-6)
