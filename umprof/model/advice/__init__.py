"""Advice for an application read from its trace: what its transfers should use, and what that saves.

The trace model (:mod:`umprof.model.application`: what the program does) stays apart; the advice reads it as a
pipeline, a module a step:

- read (``workload``, ``read``): the application's loop as umprof's workload, ranked by the calibration of its GPU;
- adjust (``rules``, a module a rule): what the trace measured corrects the calibration's prices, in seconds, for the
  program as it runs now and for the ways each rule applies to;
- bound (``bounds``): no way predicted below what its copies, kernels and host work need, no saving above the time
  the change removes;
- rank, choose (``pipeline``): every way's predicted time; the fastest, or among those within the prediction's own
  error the one that changes least code, kept where its saving is within the loop's noise;
- explain (``explain``, ``changes``, ``flows``): the change in the program's own calls, what bounds the saving (each
  limit a code and its text: ``result.Limit``), and the verdict.

Every threshold is a named constant in ``thresholds``; the answer is ``result.AppAdvice``."""

from umprof.model.advice.changes import PART_BACK, change_text, framework_of, is_python
from umprof.model.advice.pipeline import advise
from umprof.model.advice.result import Advice, AppAdvice, Limit
from umprof.model.advice.thresholds import NOISE, PREDICTION_ERROR
from umprof.model.advice.workload import IN_PLACE, workload_of

__all__ = ["IN_PLACE", "NOISE", "PART_BACK", "PREDICTION_ERROR", "Advice", "AppAdvice", "Limit", "advise",
           "change_text", "framework_of", "is_python", "workload_of"]
