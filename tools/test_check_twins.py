#!/usr/bin/env python3
"""Unit tests of tools/check_twins.py: an English page and its Korean twin kept in step."""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_twins  # noqa: E402

ENGLISH = """# m2.03: tiled GEMM
[한국어](README.ko.md)

The kernel reaches 8.45 TFLOP/s <!-- fig: m2_03_tiled_gemm TFLOPS gemm/solution/n:1024 -->.
Grade it with `./course grade m2_03`; see [the setup](../../docs/setup.md#cuda).

## Part 1
```bash
./course grade m2_03
```
"""

KOREAN = """# m2.03: 타일 GEMM
[English](README.md)

커널은 8.45 TFLOP/s <!-- fig: m2_03_tiled_gemm TFLOPS gemm/solution/n:1024 -->에 이릅니다.
`./course grade m2_03`으로 채점하세요. [설치](../../docs/setup.ko.md#cuda-설치)와
[용어집](../../docs/glossary.ko.md)을 보세요.

## 1부
```bash
./course grade m2_03
```
"""


class TwinCheckTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        self.root = Path(self.scratch.name)
        self.folder = self.root / "month2" / "03_tiled_gemm"
        self.folder.mkdir(parents=True)
        (self.root / "README.md").write_text("# Course\n[한국어](README.ko.md)\n")
        (self.root / "README.ko.md").write_text("# 코스\n[English](README.md)\n")

    def tearDown(self):
        self.scratch.cleanup()

    def check(self, english=ENGLISH, korean=KOREAN):
        (self.folder / "README.md").write_text(english)
        if korean is not None:
            (self.folder / "README.ko.md").write_text(korean)
        return check_twins.compare(self.folder / "README.md", self.folder / "README.ko.md",
                                   "month2/03_tiled_gemm/README.md") if korean is not None else None

    def test_a_faithful_twin_passes(self):
        self.assertEqual(self.check(), [])

    def test_a_changed_figure_in_the_english_page_fails_until_the_korean_follows(self):
        english = ENGLISH.replace("8.45 TFLOP/s <!-- fig: m2_03_tiled_gemm TFLOPS gemm/solution/n:1024",
                                  "8.5 TFLOP/s <!-- fig: m2_03_tiled_gemm TFLOPS gemm/solution/n:1024")
        problems = self.check(english=english)
        self.assertTrue(any("figure" in p and "8.5" in p for p in problems), problems)

    def test_a_changed_command_fails(self):
        english = ENGLISH.replace("```bash\n./course grade m2_03", "```bash\n./course grade m2_03 --verbose")
        problems = self.check(english=english)
        self.assertTrue(any("code block 1 differs" in p for p in problems), problems)
        english = ENGLISH.replace("with `./course grade m2_03`", "with `./course test m2_03`")
        problems = self.check(english=english)
        self.assertTrue(any("inline code" in p for p in problems), problems)

    def test_a_changed_link_or_heading_fails(self):
        problems = self.check(english=ENGLISH.replace("docs/setup.md", "docs/overview.md"))
        self.assertTrue(any("links differ" in p for p in problems), problems)
        problems = self.check(english=ENGLISH.replace("## Part 1", "## Part 1\n### A step"))
        self.assertTrue(any("headings differ" in p for p in problems), problems)

    def test_the_language_links_at_the_top_are_required_both_ways(self):
        problems = self.check(korean=KOREAN.replace("[English](README.md)\n", ""))
        self.assertTrue(any("README.ko.md: no link to README.md" in p for p in problems), problems)

    def test_a_page_without_its_twin_is_reported_unless_existing_only(self):
        self.check(korean=None)
        self.assertEqual(check_twins.main(["--root", str(self.root), "--existing-only"]), 0)
        self.assertEqual(check_twins.main(["--root", str(self.root)]), 1)


if __name__ == "__main__":
    unittest.main()
