"""Where the course's files are: the repository, an exercise's two folders, the build tree."""
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
COMMON_INCLUDE = ROOT / "common" / "include"
IMPLS = ("exercise", "solution")

_EXERCISE_ID = re.compile(r"^m(\d)[._](\d\d)")


def exercise_folder(exercise):
    """month1/05_torch_extension for 'm1_05', 'm1.05', 'm1_05_torch_extension' or the folder itself."""
    text = str(exercise)
    match = _EXERCISE_ID.match(text)
    if match is None:
        folder = Path(text)
        if (ROOT / folder).is_dir():
            return folder
        raise ValueError(f"unknown exercise {exercise!r}: give its id (m1_05) or folder (month1/05_torch_extension)")
    month, number = match.groups()
    candidates = sorted((ROOT / f"month{month}").glob(f"{number}_*"))
    if not candidates:
        raise ValueError(f"exercise {exercise!r}: no folder month{month}/{number}_* in {ROOT}")
    return candidates[0].relative_to(ROOT)


def exercise_id(exercise):
    """'m1_05_torch_extension' for any of the forms exercise_folder() takes."""
    folder = exercise_folder(exercise)
    return f"m{folder.parts[0][len('month'):]}_{folder.parts[1]}"


def source_dir(exercise, impl):
    """The folder whose files are built for `impl`: yours, or its twin under solutions/."""
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
    folder = exercise_folder(exercise)
    return ROOT / folder if impl == "exercise" else ROOT / "solutions" / folder


def build_tree():
    """The CMake build folder when ctest or ./course runs us (COURSE_BUILD_DIR), else None."""
    value = os.environ.get("COURSE_BUILD_DIR")
    return Path(value) if value else None


# The one setting that points an exercise built on earlier exercises' kernels (m3.01 on
# month 2's GEMMs, m3.02 on m1.01, m3.06 on m3.03, ...) at the reference versions of those
# kernels, for a learner who skipped them or wants to tell two bugs apart:
#   COURSE_EARLIER_KERNELS=solution ./course grade m3_01
EARLIER_KERNELS_SETTING = "COURSE_EARLIER_KERNELS"


def earlier_impl(impl):
    """Whose earlier kernels version `impl` builds on: the solution always on the reference's;
    your exercise on yours, unless COURSE_EARLIER_KERNELS=solution."""
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
    if impl == "solution":
        return "solution"
    value = os.environ.get(EARLIER_KERNELS_SETTING, "").strip() or "exercise"
    if value not in IMPLS:
        raise ValueError(f"{EARLIER_KERNELS_SETTING} must be 'exercise' (your earlier kernels, the "
                         f"default) or 'solution' (the reference ones), got {value!r}")
    return value
