"""paddle.static's persistence entry points: `save` / `load` (checkpoints) and
`save_inference_model` / `load_inference_model`. They live in numbaflow/persistence/
(checkpoint.py, inference_model.py), with the file formats and the commit protocol."""
from ..graph.serialize import (FORMAT_VERSION, FileFormatError, check_format,  # noqa: F401
                               program_from_dict, program_to_dict)
from ..persistence.checkpoint import load, save  # noqa: F401
from ..persistence.inference_model import load_inference_model, save_inference_model  # noqa: F401
