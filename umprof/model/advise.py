"""The advice on a trace, kept importable by its former name: the code is the package :mod:`umprof.model.advice`."""

from umprof.model.advice import (IN_PLACE, NOISE, PART_BACK, PREDICTION_ERROR, Advice, AppAdvice, Limit, advise,
                                 change_text, framework_of, is_python, workload_of)

__all__ = ["IN_PLACE", "NOISE", "PART_BACK", "PREDICTION_ERROR", "Advice", "AppAdvice", "Limit", "advise",
           "change_text", "framework_of", "is_python", "workload_of"]
