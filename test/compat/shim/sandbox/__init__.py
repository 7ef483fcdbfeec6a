"""rlpipe's compatibility runner: stand-ins for the SandboxFusion modules its runner tests import (the request and
response models, the status enums); the server under test is rlpipe serve, reached over HTTP."""
