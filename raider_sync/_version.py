"""The package's version, in a module of its own so that modules below the package face
(the client's handshake, telemetry) can name it without importing the face."""
__version__ = "0.1.0"
