"""Persistence: state out and back (`static.save` / `static.load`, inference models, Paddle's
files), one home for the file machinery; `static.io` and `fluid.io` re-export its entry points.

Files (our own format, not Paddle's pickles; Paddle's `.pdparams` / `.pdopt` pickles
load too, through a restricted unpickler, `paddle_pickle.py`):
  <path>.pdparams   the program's Parameters          } arrays files: an uncompressed
  <path>.pdopt      its other persistables (optimizer } `.npz` holding the format version,
                    moments, learning rate, ...)      } a JSON index and one array per
  <prefix>.nfparams  an inference model's parameters  } variable (`arrays.py`)
  <prefix>.nfmodel  the pruned inference program, as JSON (graph/serialize.py)
An inference model's `.pdmodel` / `.pdiparams` are always Paddle's format (format="paddle",
`numbaflow/formats/`); numbaflow 0.1.0's own-format files under those names still load.

Modules: `checkpoint.py` (save/load and the helpers program_state.py shares),
`inference_model.py` (save/load_inference_model, both formats), `atomic.py` (the commit
protocol), `arrays.py` (the arrays files), `paddle_pickle.py` (Paddle's pickles).

The files of one save are committed together (`atomic.py`): a kill at any moment leaves
either the whole previous save or the whole new one visible, and the next save to the same
place removes what an interrupted one left. Every file of a save carries its save id, so a
load refuses files from different saves. A load checks the files against the program
first and writes nothing into the scope unless every variable matches; a damaged file
raises ValueError naming it.
"""
