"""rlpipe's compatibility runner: a stand-in for FastAPI, so SandboxFusion's runner tests talk to rlpipe serve over HTTP."""
