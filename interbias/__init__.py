"""interbias: compound-condition speaker-verification benchmark harness."""

from interbias.utils.moved import install as install_moved

__version__ = "0.1.0"

install_moved(__version__)  # an import of a moved module path names its new path (interbias.utils.moved)
