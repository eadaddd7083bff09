"""The exceptions layerpick raises for problems a user can fix (bad input, missing models).

Every one of them carries a message meant to be shown as a single line; the CLI maps them to exit code 1.
"""


class LayerpickError(Exception):
    """A problem with the user's input or environment, explained in one line."""


class ModelNotFoundError(LayerpickError):
    """A model path, alias or hub id that cannot be found or loaded."""


class ModelFileError(ModelNotFoundError):
    """A model file that is there but cannot be read: truncated, corrupt, or not the format its name says."""


class DeviceUnavailableError(LayerpickError):
    """A device (cuda, mps) that this machine or this torch build does not have."""


class UnsupportedArchitectureError(LayerpickError):
    """A model family that layerpick's surgery does not know."""


class CalibrationError(LayerpickError):
    """Calibration texts that are missing, empty, unreadable or malformed."""


class LayerRangeError(LayerpickError):
    """A layer index outside the model's range."""


class NonFiniteStatesError(LayerpickError):
    """NaN or inf values in a layer's representation (for example fp16 overflow)."""


class ReportFormatError(LayerpickError):
    """A report file (select report.json, validation.json) that is missing, unreadable or lacks keys."""


class ArgumentError(LayerpickError, TypeError):
    """A Python verb's argument of a type it does not take (a number for a path, a dict for a config)."""
