"""The Python client installs as a package: `pip install ./clients/python`
into a fresh virtual environment, offline (--no-build-isolation --no-index:
the environment sees Debian's setuptools, wheel, pyzmq and msgpack through
--system-site-packages), then the installed package, not the checkout, is
what `import cortexstream` and the `cortexstream` command run. It installs
from a copy: setuptools writes build/ and *.egg-info beside the sources."""

import os
import shutil
import subprocess
import tempfile
import unittest

from tests.e2e import support

PYTHON = "/usr/bin/python3"


class ClientInstallTest(unittest.TestCase):
    def test_pip_install_into_a_venv(self):
        if subprocess.run([PYTHON, "-c", "import ensurepip, setuptools, wheel"], capture_output=True).returncode:
            self.skipTest("this machine's python3 has no venv/ensurepip, setuptools or wheel")
        with tempfile.TemporaryDirectory() as tmp:
            venv = os.path.join(tmp, "venv")
            subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", venv], check=True, timeout=120)
            py = os.path.join(venv, "bin", "python")
            src = os.path.join(tmp, "src")
            shutil.copytree(os.path.join(support.REPO_DIR, "clients", "python"), src,
                            ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
            r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-cache-dir", src],
                               capture_output=True, text=True, timeout=300, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            probe = ("import cortexstream, inspect; "
                     "print(cortexstream.__file__); "
                     "print(inspect.iscoroutinefunction(cortexstream.AsyncClient.submit)); "
                     "print(sorted(inspect.signature(cortexstream.Client.submit).parameters)[:3])")
            r = subprocess.run([py, "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            where, is_coro, params = r.stdout.splitlines()
            self.assertTrue(where.startswith(venv), where)
            self.assertEqual(is_coro, "True")
            self.assertEqual(params, "['add_bos', 'add_generation_prompt', 'chat_template_kwargs']")
            self.assertTrue(os.path.exists(os.path.join(os.path.dirname(where), "py.typed")))
            r = subprocess.run([os.path.join(venv, "bin", "cortexstream"), "--help"], capture_output=True, text=True,
                               timeout=60, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("--messages-json", r.stdout)


if __name__ == "__main__":
    unittest.main()
