"""`labels_as_arrays`: mteb's classification scoring gets the test labels as one array per experiment, and the
scores of a real classification run are those of mteb's own path."""

import numpy as np
from datasets import Dataset
from mteb.abstasks.classification import AbsTaskClassification

from layerpick.validation.evaluate import labels_as_arrays


class FakeTask(AbsTaskClassification):
    metadata = None

    def __init__(self):  # no task data: only the scoring step is exercised
        self.seen = []

    def _calculate_scores(self, y_test, y_pred):
        self.seen.append(type(y_test))
        return {"accuracy": float(np.mean(np.asarray(y_test) == np.asarray(y_pred)))}


def test_labels_reach_the_metrics_as_an_array_and_scores_stay():
    labels = Dataset.from_dict({"label": [0, 1, 1, 0, 2]})["label"]
    plain, converted = FakeTask(), labels_as_arrays(FakeTask())
    want = plain._calculate_scores(labels, [0, 1, 0, 0, 2])
    got = converted._calculate_scores(labels, [0, 1, 0, 0, 2])
    assert got == want == {"accuracy": 0.8}
    assert converted.seen == [np.ndarray]


def test_other_tasks_are_untouched():
    """An STS task has its own `_calculate_scores` with another signature: it must stay as it is."""

    class Other:
        def _calculate_scores(self, *args):
            return args

    task = Other()
    original = task._calculate_scores
    assert labels_as_arrays(task) is task and task._calculate_scores == original
