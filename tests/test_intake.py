"""The grading run's intake (attnkit_grader.intake): the pre-check that runs beside the canary writes nothing, and
what it found is what the written steps then record."""

import hashlib
import shutil
from pathlib import Path

from attnkit_grader import Course
from attnkit_grader.intake import collect_all, look, read_roster

from conftest import ROOT, copy_course

PS1 = "ps1_learnable_pe"
EXAMPLE = ROOT / "examples" / "example_class"


def digest(root):
    """{relative path: sha256} of every file under ``root``."""
    return {path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(Path(root).rglob("*")) if path.is_file()}


def test_looking_at_a_class_writes_nothing_but_its_scratch_folder_and_collecting_copies_what_it_saw(tmp_path):
    """look() runs while the canary sings, which promises that nothing is written before it passes: the course
    (no gradebook made, no submitted/), the hand-ins and the committed release/ stay byte for byte as they were."""
    course = Course(copy_course(tmp_path / "course"))
    handed_in = tmp_path / "handed_in"
    for student in ("blank", "broken_json", "ref_solution"):
        shutil.copytree(EXAMPLE / student, handed_in / student)
    (handed_in / "linked").mkdir()
    (handed_in / "linked" / PS1).symlink_to(handed_in / "ref_solution" / PS1)   # a classmate's work, linked
    roster = read_roster(EXAMPLE / "students.csv")
    students = ["blank", "broken_json", "linked", "ref_solution"]
    before = digest(course.root), digest(handed_in)
    (tmp_path / "scratch").mkdir()
    records, warnings = look(course, [PS1], handed_in, roster, students, tmp_path / "scratch")
    assert (digest(course.root), digest(handed_in)) == before
    assert not (course.root / "gradebook.db").exists() and not (course.root / "submitted").exists()
    assert (tmp_path / "scratch" / PS1 / f"{PS1}.ipynb").is_file()       # the release, generated there
    assert warnings == ["student folder 'linked' is not in the class list; graded anyway"]   # release/ in sync
    status = {student: records[student, PS1].status for student in students}
    assert status == {"blank": "pending", "broken_json": "rejected", "linked": "rejected", "ref_solution": "pending"}
    assert "symbolic link" in records["linked", PS1].issue_texts()[0]
    collect_all(course, handed_in, records)
    submitted = course.step_dir("submitted")
    assert sorted(p.name for p in submitted.iterdir()) == ["blank", "broken_json", "ref_solution"]   # no link
    assert digest(submitted / "ref_solution" / PS1) == digest(handed_in / "ref_solution" / PS1)
