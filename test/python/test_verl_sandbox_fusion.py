"""verl's own SandboxFusion reward client (verl/utils/reward_score/sandbox_fusion, as released) against `rlpipe serve`,
for every language the server offers: a right program scores True on every case, a wrong one False (stdio), and a
test file that fails scores verl's runtime-error code (test-runner languages)."""
import glob
import importlib.util
import json
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = json.load(open(os.path.join(ROOT, "test", "fixtures", "sandbox-programs.json")))


def _verl_clients():
    """verl's sandbox_fusion/utils.py of each release the test virtualenv holds (a file with no verl imports)."""
    found = sorted(glob.glob(os.path.join(ROOT, ".venv-test", "verl", "*", "verl", "utils", "reward_score", "sandbox_fusion", "utils.py")))
    if not found:
        raise RuntimeError("no verl release in .venv-test/verl: npm test's setup (scripts/setup.sh --test) installs them")
    return found


def _load(path):
    name = "verl_sandbox_fusion_" + path.split(os.sep)[-7].replace(".", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NEWEST = _load(_verl_clients()[-1])
OLDEST = _load(_verl_clients()[0])


def test_the_server_offers_a_program_table_language_for_each_language(env_server):
    _, languages = env_server
    untested = [l for l in languages if l not in PROGRAMS["stdio"] and l not in PROGRAMS["tests"]]
    assert untested == [], "sandbox-programs.json has no program for %s" % untested
    # Everything the server runs is a language verl's client accepts.
    assert [l for l in languages if l not in NEWEST.SUPPORTED_LANGUAGES] == []


@pytest.mark.parametrize("language", sorted(PROGRAMS["stdio"]))
def test_stdio_programs_score_as_verl_expects(env_server, language):
    url, languages = env_server
    assert language in languages, "%s: npm test's setup installs every language's toolchain" % language
    in_outs = {"inputs": ["1 2\n", "40 2\n"], "outputs": ["3\n", "42\n"]}
    endpoint = url + "/run_code"
    for client in (NEWEST, OLDEST) if language == "python" else (NEWEST,):
        right, meta = client.check_correctness(endpoint, in_outs, PROGRAMS["stdio"][language]["right"], timeout=60, language=language)
        assert right == [True, True], json.dumps(meta)[:2000]
        wrong, meta = client.check_correctness(endpoint, in_outs, PROGRAMS["stdio"][language]["wrong"], timeout=60, language=language)
        assert wrong == [False, False], json.dumps(meta)[:2000]


@pytest.mark.parametrize("language", sorted(PROGRAMS["tests"]))
def test_test_files_score_as_verl_expects(env_server, language):
    url, languages = env_server
    assert language in languages, "%s needs only the runtime environment, which this server has" % language
    # No expected output: verl scores a test file by whether its run succeeded.
    in_outs = {"inputs": [""], "outputs": [None]}
    endpoint = url + "/run_code"
    passed, meta = NEWEST.check_correctness(endpoint, in_outs, PROGRAMS["tests"][language]["pass"], timeout=60, language=language)
    assert passed == [True], json.dumps(meta)[:2000]
    failed, meta = NEWEST.check_correctness(endpoint, in_outs, PROGRAMS["tests"][language]["fail"], timeout=60, language=language)
    assert failed == [-2], json.dumps(meta)[:2000]
