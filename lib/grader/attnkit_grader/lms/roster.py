"""Who the kit's students are, for matching with an LMS: the gradebook's students, completed by the class list.

``attnkit grade`` enrols every student of the class list in the gradebook (id, first_name, last_name, email and
lms_user_id, as ``nbgrader db student import`` reads them), so the gradebook alone usually suffices. A class list
given to the export adds or corrects those fields (its value wins where it has one), and its students the
gradebook lacks are added, without submissions. Nobody in either is left out.
"""

from dataclasses import dataclass

from ..intake import STUDENT_COLUMNS, read_roster

FIELDS = ("id",) + STUDENT_COLUMNS          # the fields a roster may match an LMS on: lms_user_id, email, id


@dataclass(frozen=True)
class Student:
    """One student as the kit knows them."""

    id: str
    first_name: str = None
    last_name: str = None
    email: str = None
    lms_user_id: str = None

    @property
    def name(self):
        """'First Last', or the id when the roster has no name."""
        return " ".join(part for part in (self.first_name, self.last_name) if part) or self.id


def students(gradebook, class_list=None):
    """[Student] of the gradebook, completed by the class-list CSV ``class_list`` (argument 'students_csv'), by id."""
    found = {s.id: {k: getattr(s, k) for k in STUDENT_COLUMNS} for s in gradebook.students}
    if class_list is not None:
        for student, values in read_roster(class_list).items():
            found.setdefault(student, {})
            found[student].update({k: v for k, v in values.items() if v})
    return [Student(student, **{k: (v.strip() if isinstance(v, str) else v) or None for k, v in values.items()})
            for student, values in sorted(found.items())]
