"""The package version, in a module that imports nothing: every part that records it (checkpoints, axes, probe
folders) imports it from here, so that no part imports the package root, which exposes the Python API."""

__version__ = "0.1.0"
