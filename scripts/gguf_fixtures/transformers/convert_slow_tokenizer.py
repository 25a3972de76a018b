"""bytes_to_unicode, as the converter imports it from transformers."""
from . import _bytes_to_unicode as bytes_to_unicode  # noqa: F401
