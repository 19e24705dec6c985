"""The backend (graph) API's plan filter and tensor layout: which engines the bench may pick."""

from __future__ import annotations

from cudnn_doctor.bench import backend
from cudnn_doctor.bench import cudnn as dnn


def problem(tensor_cores: bool, nhwc: bool = False) -> backend.ConvProblem:
    return backend.ConvProblem(name="conv-fwd", storage=dnn.DATA_FLOAT, compute=dnn.DATA_FLOAT, nhwc=nhwc,
                               x_dims=(2, 3, 5, 7), w_dims=(4, 3, 3, 3), y_dims=(2, 4, 5, 7), pad=1, stride=1,
                               tensor_cores=tensor_cores)


def test_fp32_without_tf32_refuses_tensor_core_engines():
    assert backend.wanted(problem(tensor_cores=False), []) is True
    assert backend.wanted(problem(tensor_cores=False), [backend.NOTE_TENSOR_CORE]) is False
    assert backend.wanted(problem(tensor_cores=True), [backend.NOTE_TENSOR_CORE]) is True


def test_engines_that_down_convert_inputs_are_never_picked():
    for tensor_cores in (False, True):
        assert backend.wanted(problem(tensor_cores), [backend.NOTE_DOWN_CONVERT_INPUTS]) is False


def test_strides_of_both_layouts():
    assert backend.strides((2, 3, 5, 7), nhwc=False) == [105, 35, 7, 1]
    assert backend.strides((2, 3, 5, 7), nhwc=True) == [105, 1, 21, 3]


def test_every_pass_names_its_three_tensors_once():
    for _kind, alpha, beta, conv, roles in backend.OPERATIONS.values():
        assert sorted(roles) == ["w", "x", "y"]
        assert len({alpha, beta, conv, *roles.values()}) == 6
    assert sorted(backend.UIDS.values()) == [1, 2, 3]
