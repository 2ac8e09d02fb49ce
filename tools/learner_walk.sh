#!/usr/bin/env bash
# Walks the course as a learner who gets every exercise right: for each exercise of
# months 1 and 2, in order, copies the reference solution over the skeleton, grades it with
# ./course grade, records the verdict and the seconds it took, and puts the skeleton back.
# Prints a table at the end; exit status 1 if any exercise failed. Needs a GPU.
#
#   tools/learner_walk.sh              every month-1 and month-2 exercise
#   tools/learner_walk.sh m1_01 m2_05  just these
#
# The skeletons are restored from git after each exercise, and also if the walk is
# interrupted (Ctrl-C) or fails: the working tree is left as it was, and so are the grades
# ./course status reports. It refuses to start
# when an exercise file already has changes, so nothing of yours is overwritten.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

exercise_id() {  # month1/01_vector_add -> m1_01_vector_add
  local month="${1%%/*}"
  echo "m${month#month}_${1#*/}"
}

all_folders=()
for folder in month1/[0-9][0-9]_* month2/[0-9][0-9]_*; do
  [[ -f "$folder/CMakeLists.txt" ]] && all_folders+=("$folder")
done
folders=()
for name in "$@"; do
  short="${name//./_}"
  found=""
  for folder in "${all_folders[@]}"; do
    id="$(exercise_id "$folder")"
    [[ "$id" == "$short" || "$id" == "${short}_"* ]] && found="$folder"
  done
  if [[ -z "$found" ]]; then
    echo "learner_walk: unknown exercise '$name'. The exercises are:" >&2
    for folder in "${all_folders[@]}"; do echo "  $(exercise_id "$folder")" >&2; done
    exit 2
  fi
  folders+=("$found")
done
[[ $# -gt 0 ]] || folders=("${all_folders[@]}")

# The files a learner edits: those with a twin under solutions/.
learner_files() {
  (cd "solutions/$1" && find . -type f | sed "s|^\./|$1/|") | while read -r file; do
    [[ -f "$file" ]] && echo "$file"
  done
}

copied=()
restore() {
  if [[ ${#copied[@]} -gt 0 ]]; then
    git checkout HEAD -- "${copied[@]}"
    copied=()
  fi
}
trap restore EXIT
trap 'restore; exit 130' INT TERM

for folder in "${folders[@]}"; do
  mapfile -t files < <(learner_files "$folder")
  if ! git diff --quiet HEAD -- "${files[@]}"; then
    echo "learner_walk: $folder has uncommitted changes; commit or ./course reset them first" >&2
    exit 2
  fi
done

rows=()
failed=0
for folder in "${folders[@]}"; do
  mapfile -t files < <(learner_files "$folder")
  copied=("${files[@]}")
  for file in "${files[@]}"; do cp "solutions/$file" "$file"; done
  start=$(date +%s)
  if "$ROOT/course" grade "$folder"; then verdict=passed; else verdict=FAILED; failed=1; fi
  seconds=$(( $(date +%s) - start ))
  restore
  # The grade was of the solution, not of your files: forget it, so ./course status is unchanged.
  rm -f "${BUILD_DIR:-$ROOT/build}/course_progress/$(exercise_id "$folder").json"
  rows+=("$(printf '| %-28s | %-6s | %7s |' "$folder" "$verdict" "$seconds")")
done

echo
echo "| exercise                     | grade  | seconds |"
echo "|------------------------------|--------|--------:|"
printf '%s\n' "${rows[@]}"
exit "$failed"
