#!/usr/bin/env python3
"""Unit tests of tools/check_links.py: relative links and #sections resolve."""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_links  # noqa: E402


class LinkCheckTest(unittest.TestCase):
    def test_files_folders_and_sections_resolve_and_broken_ones_are_named(self):
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            (root / "docs").mkdir()
            (root / "docs" / "setup.md").write_text("# Set-up\n## CUDA 12.x and `nvcc`\n## 설치 확인\n")
            page = root / "README.md"
            page.write_text("[a](docs/setup.md) [b](docs/) [c](docs/setup.md#cuda-12x-and-nvcc)\n"
                            "[d](docs/setup.md#설치-확인) [e](https://example.com/x.md)\n"
                            "`[f](nowhere.md)` in code is not a link\n")
            self.assertEqual(check_links.check_page(page, root), [])
            page.write_text("[a](docs/missing.md)\n[b](docs/setup.md#no-such-part)\n")
            problems = check_links.check_page(page, root)
            self.assertEqual(len(problems), 2)
            self.assertIn("README.md:1", problems[0])
            self.assertIn("no section #no-such-part", problems[1])


if __name__ == "__main__":
    unittest.main()
