"""skill-eval: re-runnable evidence that Agent Skills work."""

__version__ = "0.1.0"
