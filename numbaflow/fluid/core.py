"""fluid.core is numbaflow.core (its home, below every API face): one module object, so
`fluid.core is paddle.framework.core`."""
import sys

from .. import core

sys.modules[__name__] = core
