#!/usr/bin/env python3
"""Unit tests of ./course doctor's own logic (tools/doctor.py), on the CPU: what it reads from
the tools' output and the course's files, and the fixes it proposes."""
import contextlib
import io
import os
import shutil
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import doctor  # noqa: E402


class ParsingTest(unittest.TestCase):
    def test_versions(self):
        self.assertEqual(doctor.version_tuple("cmake version 3.25.1"), (3, 25, 1))
        self.assertEqual(doctor.version_tuple("12.2.0-14"), (12, 2, 0))
        self.assertEqual(doctor.version_tuple("no digits"), ())
        self.assertEqual(doctor.version_text((3, 22)), "3.22")

    def test_the_course_files_give_the_minimums(self):
        text = (doctor.ROOT / "CMakeLists.txt").read_text()
        self.assertGreaterEqual(doctor.cmake_minimum(text), (3, 21))  # ctest --output-junit
        self.assertEqual(doctor.oldest_cuda_toolkit(text), (12, 0))
        self.assertEqual(doctor.cmake_minimum("cmake_minimum_required(VERSION 3.24...3.30)"), (3, 24))
        self.assertEqual(doctor.oldest_cuda_toolkit("set(COURSE_OLDEST_CUDA_TOOLKIT \"12.4\")"), (12, 4))

    def test_newest_gcc_from_host_config(self):
        text = ("#if defined(__GNUC__)\n#if __GNUC__ > 12\n#error -- unsupported GNU version! gcc "
                "versions later than 12 are not supported!\n#endif /* __GNUC__ > 12 */\n")
        self.assertEqual(doctor.newest_gcc_accepted(text), 12)
        self.assertIsNone(doctor.newest_gcc_accepted(""))

    def test_profiling_permission(self):
        self.assertTrue(doctor.profiling_restricted("EnableMSI: 1\nRmProfilingAdminOnly: 1\n"))
        self.assertFalse(doctor.profiling_restricted("RmProfilingAdminOnly: 0\n"))
        self.assertIsNone(doctor.profiling_restricted(""))  # WSL2, or no driver

    def test_nvidia_smi(self):
        gpus = doctor.parse_smi_csv("NVIDIA H200, 9.0, 570.86.15\nTesla T4, 7.5, 570.86.15\n")
        self.assertEqual([g["compute_capability"] for g in gpus], [(9, 0), (7, 5)])
        self.assertEqual(gpus[1]["name"], "Tesla T4")
        self.assertEqual(gpus[0]["driver"], "570.86.15")
        self.assertEqual(doctor.parse_smi_csv("No devices were found"), [])
        self.assertEqual(doctor.driver_cuda_version("| Driver Version: 570.86.15   CUDA Version: 12.8 |"),
                         (12, 8))


def probe(**values):
    base = {"executable": "/opt/venv/bin/python3", "externally_managed": False}
    base.update(values)
    return base


class FixesTest(unittest.TestCase):
    def test_pip_for_the_builds_python_apt_for_a_managed_system_python(self):
        self.assertEqual(doctor.python_install_command(probe(), ["scikit-learn"], ["python3-sklearn"]),
                         "/opt/venv/bin/python3 -m pip install scikit-learn")
        command = doctor.python_install_command(probe(executable="/usr/bin/python3", externally_managed=True),
                                                ["scikit-learn"], ["python3-sklearn"])
        self.assertTrue(command.endswith("apt-get install python3-sklearn"), command)

    def test_torch_command_matches_nvcc(self):
        self.assertTrue(doctor.torch_install_command(probe(), 12).endswith("/whl/cu126"))
        self.assertTrue(doctor.torch_install_command(probe(), 13).endswith("/whl/cu130"))
        self.assertTrue(doctor.torch_install_command(probe(), 13).startswith("/opt/venv/bin/python3 -m pip"))
        managed = doctor.torch_install_command(probe(externally_managed=True), 12)
        self.assertIn("python3 -m venv", managed)
        self.assertIn("/whl/cu126", managed)

    def test_torch_item(self):
        no_torch = doctor.torch_item(probe(torch=None), (13, 0), False)
        self.assertEqual(no_torch.status, doctor.FIX)
        self.assertIn("cu130", no_torch.text)
        cpu = doctor.torch_item(probe(torch="1.13.1", torch_cuda=None), (12, 6), False)
        self.assertEqual(cpu.status, doctor.FIX)
        self.assertIn("has no CUDA", cpu.text)
        self.assertIn("to fix: /opt/venv/bin/python3 -m pip uninstall -y torch && "
                      "/opt/venv/bin/python3 -m pip install torch --index-url "
                      "https://download.pytorch.org/whl/cu126", cpu.text)
        mismatch = doctor.torch_item(probe(torch="2.5.1+cu124", torch_cuda="12.4", cuda_available=True),
                                     (13, 0), True)
        self.assertEqual(mismatch.status, doctor.FIX)
        self.assertIn("CUDA 12.4, but nvcc is CUDA 13.0", mismatch.text)
        self.assertTrue(mismatch.text.endswith("/whl/cu130"), mismatch.text)
        good = doctor.torch_item(probe(torch="2.5.1+cu124", torch_cuda="12.4", cuda_available=True,
                                       device="NVIDIA H200"), (12, 6), True)
        self.assertEqual(good.status, doctor.OK)
        self.assertIn("NVIDIA H200", good.text)
        broken = doctor.torch_item({"executable": "/x/python3", "error": "no answer"}, None, False)
        self.assertEqual(broken.status, doctor.FIX)

    def test_items_read_as_one_line(self):
        line = doctor.Item(doctor.NEED, "CMake", "not found; to fix: apt-get install cmake").line()
        self.assertEqual(line, "NEED  CMake: not found; to fix: apt-get install cmake")
        self.assertNotIn("\n", line)


class MachineTest(unittest.TestCase):
    def facts(self, gpus, driver_cuda=(12, 8)):
        return {"gpus": gpus, "driver": "570.86.15", "driver_cuda": driver_cuda, "error": None}

    def test_a_t4_runs_the_course_but_says_what_skips(self):
        t4 = {"name": "Tesla T4", "compute_capability": (7, 5), "shared_bytes": 64 * 1024}
        [item] = doctor.check_gpu(self.facts([t4]))
        self.assertEqual(item.status, doctor.OK)
        self.assertIn("compute capability 7.5, 64 KiB shared memory per block", item.text)
        self.assertIn("bfloat16", item.text)
        self.assertIn("Hopper", item.text)

    def test_a_hopper_runs_everything(self):
        h200 = {"name": "NVIDIA H200", "compute_capability": (9, 0), "shared_bytes": None}
        [item] = doctor.check_gpu(self.facts([h200]))
        self.assertEqual(item.status, doctor.OK)
        self.assertIn("227 KiB", item.text)  # from the table, when the driver was not asked
        self.assertNotIn("skip", item.text)

    def test_too_old_or_missing(self):
        v100 = {"name": "Tesla V100", "compute_capability": (7, 0), "shared_bytes": 96 * 1024}
        self.assertEqual(doctor.check_gpu(self.facts([v100]))[0].status, doctor.FIX)
        [none] = doctor.check_gpu({"gpus": [], "driver": None, "driver_cuda": None, "error": None})
        self.assertEqual(none.status, doctor.FIX)
        self.assertIn("to fix:", none.text)

    def test_driver_against_nvcc(self):
        t4 = {"name": "Tesla T4", "compute_capability": (7, 5), "shared_bytes": None}
        self.assertEqual(doctor.check_driver(self.facts([t4]), (12, 6)).status, doctor.OK)
        old = doctor.check_driver(self.facts([t4]), (13, 0))
        self.assertEqual(old.status, doctor.FIX)
        self.assertIn("580", old.text)


class PythonChoiceTest(unittest.TestCase):
    build = Path("/tmp/build")

    def test_not_configured(self):
        item = doctor.python_choice_item(None, None, "", False, self.build, predicted="/usr/bin/python3")
        self.assertEqual(item.status, doctor.OK)
        self.assertIn("not configured yet: the first build will pick /usr/bin/python3", item.text)

    def test_configure_prefers_a_cuda_pytorch_then_any(self):
        answers = {"/venv/bin/python3": {"torch": None},
                   "/usr/bin/python3": {"torch": "1.13.1", "torch_cuda": None},
                   "/opt/py/bin/python3": {"torch": "2.5.1", "torch_cuda": "12.4"}}
        self.assertEqual(doctor.choose_python(list(answers), answers.get)[0], "/opt/py/bin/python3")
        self.assertEqual(doctor.choose_python(list(answers)[:2], answers.get)[0], "/usr/bin/python3")
        self.assertEqual(doctor.choose_python(list(answers)[:1], answers.get)[0], "/venv/bin/python3")
        # A COURSE_PYTHON with PyTorch wins, CUDA or not.
        self.assertEqual(doctor.choose_python(list(answers)[1:], answers.get, "/usr/bin/python3")[0],
                         "/usr/bin/python3")
        self.assertEqual(doctor.choose_python([], answers.get), (None, {}))

    def test_the_environments_python_is_used(self):
        item = doctor.python_choice_item("/home/me/venv/bin/python3", ("VIRTUAL_ENV", "/home/me/venv"),
                                         "", True, self.build)
        self.assertEqual(item.status, doctor.OK)
        self.assertFalse(doctor.in_environment("/home/me/venv2/bin/python3", "/home/me/venv"))

    def test_an_environment_activated_after_configure(self):
        item = doctor.python_choice_item("/usr/bin/python3", ("VIRTUAL_ENV", "/home/me/venv"), "",
                                         True, self.build)
        self.assertEqual(item.status, doctor.FIX)
        self.assertIn("picks the environment's Python", item.text)
        self.assertIn(f"to fix now: cmake -S {doctor.ROOT} -B {self.build}", item.text)

    def test_an_environment_without_torch(self):
        item = doctor.python_choice_item("/usr/bin/python3", ("CONDA_PREFIX", "/opt/conda/envs/c"), "",
                                         False, self.build)
        self.assertEqual(item.status, doctor.FIX)
        self.assertIn("has no PyTorch", item.text)

    def test_course_python_wins_until_changed(self):
        item = doctor.python_choice_item("/usr/bin/python3", ("VIRTUAL_ENV", "/home/me/venv"),
                                         "/usr/bin/python3", True, self.build)
        self.assertEqual(item.status, doctor.FIX)
        self.assertIn("-DCOURSE_PYTHON=/home/me/venv/bin/python3", item.text)


class WholeReportTest(unittest.TestCase):
    """The report runs on any machine (CI has no GPU and maybe no PyTorch) and never crashes."""

    def test_runs_here(self):
        items = doctor.diagnose(Path("/nonexistent/build"))
        names = [item.name for item in items]
        for name in ("C++ compiler", "CMake", "CUDA toolkit", "driver", "GoogleTest",
                     "Google Benchmark", "Python of the build", "PyTorch", "scikit-learn", "wheel",
                     "cuDNN", "Nsight Compute", "clang-format"):
            self.assertIn(name, names)
        self.assertTrue(any(name.startswith("GPU") for name in names))
        for item in items:
            self.assertIn(item.status, (doctor.OK, doctor.FIX, doctor.NEED))
            self.assertNotIn("\n", item.line())
            if item.status != doctor.OK and "to fix:" in item.text:
                self.assertTrue(item.text.split("to fix:", 1)[1].strip(), item.line())

    @unittest.skipUnless(shutil.which("cmake"), "needs cmake")
    def test_main_exit_status(self):
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            status = doctor.main(["--build-dir", os.devnull + "_build"])
        self.assertIn(status, (0, 1))
        self.assertIn("CMake: ", output.getvalue())


if __name__ == "__main__":
    unittest.main()
