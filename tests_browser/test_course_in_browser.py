"""A problem set's whole path through the course's hub, in Chromium, as people use it; then every lecture.

student1 types a correct answer to PS1 exercise 1 in the English edition, student2 a wrong one in the French
edition (ps1_learnable_pe_fr): each logs in on the hub's login page, fetches their edition from the
Assignment List, which offers the three languages, types the answer into the cell, saves, runs all the cells
(Run All goes to the end past the failing cells), validates and submits. student3 then hands in PS1 in student2's name from a shell. The instructor collects with the
Formgrader's Collect button (the forgery is refused by name, both genuine hand-ins are collected as one
assignment), then types the hub guide's loop into JupyterLab's terminal (attnkit collect, attnkit grade, sandboxed
through the door, attnkit release-feedback; nbgrader autograde refused) and sees the Formgrader's Autograde
button refuse too, while its Generate Feedback button writes the offline page release-feedback hands out; each
student fetches the feedback under their edition's name and reads the score the
gradebook holds, on a page whose formulas are drawn without a script and whose verdict lines wrap.
Then student3 runs every lecture (Run All Cells) and the test checks it ends without an error output and
with all its figures. Screenshots: build/browser-artifacts/STUDENT-NN-step.png and lecture-NAME.png.
"""

import json
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from conftest import ARTIFACTS, EDITION, URL, offline_page

PS1 = "ps1_learnable_pe"

# Exercise 1 as a student might write it: a trainable (max_len, num_hiddens) table added to X.
CORRECT = '''class LearnablePositionalEncoding(nn.Module):
    """X (batch, n, num_hiddens) + a learned table P[:n], then dropout; n <= max_len."""

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.max_len = max_len
        self.P = nn.Parameter(0.02 * torch.randn(max_len, num_hiddens))
        self.dropout = nn.Dropout(dropout)

    def forward(self, X):
        """(batch, n, num_hiddens) -> (batch, n, num_hiddens)."""
        num_steps = X.shape[1]
        if num_steps > self.max_len:
            raise ValueError(f"X has {num_steps} positions, more than max_len={self.max_len}")
        return self.dropout(X + self.P[:num_steps])
'''
# The same table, but forward forgets to add it.
WRONG = CORRECT.replace("return self.dropout(X + self.P[:num_steps])", "return self.dropout(X)")
ANSWERS = {"student1": CORRECT, "student2": WRONG}
EDITIONS = {"student1": PS1, "student2": f"{PS1}_fr"}     # the edition each student works in
AUTOGRADED = {"student1": 6.0}           # the two test cells of exercise 1, in full (exercise 2 is by hand)

LECTURES = sorted(p.name for p in (EDITION / "course").glob("*.ipynb"))


def shot(page, name):
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def log_in(page, user, prefix):
    page.goto(f"{URL}/hub/login")
    shot(page, f"{prefix}-01-login")
    page.fill("#username_input", user)
    page.fill("#password_input", f"attention-{user}")
    page.click("#login_submit")
    page.wait_for_selector("#jp-main-dock-panel", timeout=180_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").wait_for(timeout=60_000)


def nbgrader_menu(page):
    """Open the Nbgrader menu; return the labels of its items."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    items = page.locator(".lm-Menu-content > .lm-Menu-item:not(.lm-mod-hidden) .lm-Menu-itemLabel")
    items.first.wait_for()
    return items.all_inner_texts()


def assignment_list(page):
    """Open Nbgrader -> Assignment List (or bring its tab to the front) and wait for the lists; return the
    menu's labels."""
    labels = nbgrader_menu(page)
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    page.wait_for_selector("#released_assignments_list_loading", state="hidden")
    page.wait_for_selector("#submitted_assignments_list_loading", state="hidden")
    return labels


def list_item(page, listing, assignment):
    """The row of ``assignment`` (its exact name: ps1_learnable_pe is a prefix of ps1_learnable_pe_fr) in one
    of the Assignment List's lists ('released', 'fetched', 'submitted')."""
    name = page.locator(".item_name", has_text=re.compile(rf"^\s*{re.escape(assignment)}\s*$"))
    return page.locator(f"#{listing}_assignments_list .list_item").filter(has=name).first


def type_into_cell(page, cell, text):
    """Replace the cell's text with ``text``, typed key by key. After each Enter the editor indents by
    itself; Shift+Home selects that indentation so the typed line keeps its own."""
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    for number, line in enumerate(text.rstrip("\n").split("\n")):
        if number:
            page.keyboard.press("Enter")
            page.keyboard.press("Shift+Home")
        if line:
            page.keyboard.type(line)
        else:
            page.keyboard.press("Delete")


def cell_text(cell):
    return "\n".join(line.rstrip() for line in cell.locator(".cm-line").all_inner_texts())


@pytest.mark.parametrize("student", ["student1", "student2"])
def test_a_student_fetches_types_validates_and_submits(course, new_page, student):
    page = new_page()
    log_in(page, student, student)
    assert assignment_list(page) == ["Assignment List"], "a student's Nbgrader menu offers only Assignment List"
    shot(page, f"{student}-02-assignment-list")
    for language in ("", "_fr", "_zh"):                 # every assignment is offered in the three languages
        list_item(page, "released", PS1 + language).wait_for()
    edition = EDITIONS[student]
    list_item(page, "released", edition).get_by_role("button", name="Fetch").click()
    fetched = list_item(page, "fetched", edition)
    fetched.get_by_role("button", name="Submit").wait_for()
    shot(page, f"{student}-03-fetched")

    # open the notebook from the list, as a student does
    fetched.locator("a.assignment-notebooks-link").click()
    page.locator(f"#nbgrader-{course.COURSE_ID}-{edition} a", has_text=PS1).click()
    notebook = page.locator(".jp-NotebookPanel:visible")
    answer = notebook.locator(".jp-CodeCell", has_text="class LearnablePositionalEncoding").first
    answer.wait_for()
    type_into_cell(page, answer, ANSWERS[student])
    assert cell_text(answer) == ANSWERS[student].rstrip("\n"), "the typed answer is not what the cell holds"
    page.keyboard.press("Control+s")
    page.wait_for_selector(".jp-mod-current.jp-mod-dirty", state="detached")
    shot(page, f"{student}-04-answer-typed")

    # Run All goes to the last cell past every error: the experiment left as released raises NotImplementedError.
    # The wrong answer earns part of each test cell (its shape and its table are right), so no cell raises
    # CellScoredZero; both list what failed, in French, and the right answer's list nothing
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""", timeout=180_000, polling=500)
    shot(page, f"{student}-04-run-all")
    # text contents, not inner texts: JupyterLab 4 skips rendering the cells out of view (content-visibility),
    # whose inner text is then empty
    def outputs(stream):
        return notebook.locator(f".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.{stream}']"
                                ).all_text_contents()
    errors, printed = outputs("stderr"), outputs("stdout")
    assert any("NotImplementedError" in text for text in errors), errors
    assert not any("CellScoredZero" in text for text in errors), errors
    verdicts = [text for text in printed if re.search(r"^(ok|FAIL) +\[", text, re.M)]
    assert len(verdicts) >= 2, printed
    failing = [text for text in verdicts if re.search(r"^FAIL +\[", text, re.M)]
    assert len(failing) == (2 if student == "student2" else 0), failing
    if student == "student2":
        assert all("->" in text for text in failing) and any("attendu" in text for text in failing), failing

    notebook.locator(".jp-Toolbar").get_by_role("button", name="Validate").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=180_000)
    page.wait_for_function("() => !document.querySelector('.jp-Dialog')?.innerText.includes('Validating')",
                           timeout=180_000)
    shot(page, f"{student}-05-validated")
    verdict = dialog.inner_text()
    # nbgrader fails the two written answers (graded by hand) until they are written; the test cells
    # (their docstrings: "Checks the table", "Checks forward") fail only for the wrong answer, whose
    # forward never reaches the table (so the table's gradient check fails too)
    assert "You did not provide a response." in verdict, verdict
    assert ("Checks forward" in verdict) == ("Checks the table" in verdict) == (student == "student2"), verdict
    dialog.get_by_role("button").last.click()
    dialog.wait_for(state="detached")

    page.get_by_role("tab", name="Assignments").click()
    list_item(page, "fetched", edition).get_by_role("button", name="Submit").click()
    submitted = list_item(page, "submitted", edition)
    submitted.wait_for()
    shot(page, f"{student}-06-submitted")
    assert submitted.get_by_role("button", name="Fetch Feedback").is_visible()


def as_instructor(*command, check=True):
    """``command`` run by the instructor in the course folder from a login shell (the PATH the course's
    /etc/profile.d script gives, as in JupyterLab's terminal); its output (``check``: assert it exited 0)."""
    line = "cd ~/attention-kit && exec " + " ".join(shlex.quote(part) for part in command)
    done = subprocess.run(["runuser", "-l", "instructor", "-c", line], text=True, capture_output=True)
    assert done.returncode == 0 or not check, f"{' '.join(command)}: {done.stdout}\n{done.stderr}"
    return done.stdout


def login_shell(user, line):
    """Shell text run by ``user`` in their home, from a login shell (the course's PATH)."""
    return subprocess.run(["runuser", "-l", user, "-c", line], text=True, capture_output=True)


SCORES = {}


def test_a_classmate_hands_in_in_another_students_name(course):
    """student3 submits PS1 as student2, from a shell (nbgrader submit --student lets it through): the
    forged hand-in is the newest of student2's, the one nbgrader's own collect would take."""
    done = login_shell("student3", f"nbgrader fetch_assignment {PS1} && nbgrader submit {PS1} --student=student2")
    assert done.returncode == 0, done.stdout + done.stderr
    inbound = course.exchange_dir() / course.COURSE_ID / "inbound"
    forged = [p for p in inbound.iterdir() if p.name.startswith(f"student2+{PS1}+") and p.owner() == "student3"]
    assert len(forged) == 1, sorted(p.name for p in inbound.iterdir())
    FORGED.append(forged[0].name)


FORGED = []


def formgrader(page):
    """Open Nbgrader -> Formgrader (JupyterLab shows it in a frame); return the frame."""
    labels = nbgrader_menu(page)
    assert {"Formgrader", "Create assignment", "Assignment List"} <= set(labels), labels
    page.locator(".lm-Menu-itemLabel").get_by_text("Formgrader", exact=True).click()
    return page.frame_locator(".jp-MainAreaWidget:visible iframe")


def modal_text(page, frame, name, wrapped=False):
    """The text of the Formgrader's dialog once it shows (a screenshot ``name``), then the dialog closed;
    ``wrapped``: assert that its log fits the dialog (no line runs past the right edge, no scroll bar)."""
    dialog = frame.locator(".modal.in .modal-content, .modal.show .modal-content").first
    dialog.wait_for(timeout=300_000)
    page.wait_for_timeout(500)                     # the dialog fades in
    shot(page, name)
    text = dialog.inner_text()
    if wrapped:
        widths = dialog.locator("pre").evaluate_all("logs => logs.map(log => [log.scrollWidth, log.clientWidth])")
        assert widths and all(scrolled <= shown for scrolled, shown in widths), (widths, text)
        assert "Traceback" not in text, text
    dialog.locator("button", has_text="OK").or_(dialog.locator("button.close")).first.click()
    return text


def test_the_instructor_collects_with_the_formgrader_button(course, new_page):
    """The Formgrader's Collect runs attnkit collect (hub/attnkit_formgrader.py): the dialog reports the forged
    hand-in as refused, with its reason, wrapped to the dialog's width; student1's and student2's own (French)
    hand-ins are collected, student2's not replaced."""
    if not FORGED:
        pytest.skip("no forged hand-in (the test before failed)")
    page = new_page()
    log_in(page, "instructor", "instructor-collect")
    frame = formgrader(page)
    row = frame.locator("tr", has_text=PS1).filter(has_not_text=f"{PS1}_")
    row.locator(".collect a").click()
    text = " ".join(modal_text(page, frame, "instructor-02-collected", wrapped=True).split())
    assert "There was an error collecting" in text and "Successfully" not in text, text    # a refusal, not success
    assert f"$ attnkit collect -- {PS1}" in text and "2 collected, 0 already collected, 1 refused" in text, text
    assert f"refused {FORGED[0]}:" in text and "owned by student3, not by student2" in text, text
    assert "fr edition" in text, text
    submitted = course.course_dir() / "submitted"
    handed_in = json.loads((submitted / "student2" / PS1 / f"{PS1}.ipynb").read_text())
    answer = next(c for c in handed_in["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "pe_answer")
    assert "".join(answer["source"]).strip() == WRONG.strip(), "student2's own hand-in is not what was collected"
    record = json.loads((submitted / "student2" / PS1 / "collect.json").read_text())
    assert record["edition"] == f"{PS1}_fr" and record["language"] == "fr", record
    assert not (submitted / "student3").exists()


def terminal(page):
    """A new terminal in JupyterLab (File -> New -> Terminal), focused."""
    page.locator(".lm-MenuBar-itemLabel", has_text="File").click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^New$")).hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Terminal$")).click()
    screen = page.locator(".jp-Terminal:visible .xterm-screen")
    screen.wait_for()
    screen.click()
    return screen


def type_command(page, line, log, status_file, timeout=600):
    """Type ``line`` and Enter in the focused terminal, its output shown and kept in ``log`` (a file of the
    instructor's home); its exit status is written to ``status_file``, which this waits for and returns."""
    status_file.unlink(missing_ok=True)
    page.keyboard.type(f"{line} 2>&1 | tee ~/{log}; echo ${{PIPESTATUS[0]}} > ~/{status_file.name}")
    page.keyboard.press("Enter")
    deadline = time.monotonic() + timeout
    while not status_file.exists() or not status_file.read_text().strip():
        assert time.monotonic() < deadline, f"{line}: no exit status after {timeout} s"
        time.sleep(0.5)
    return int(status_file.read_text())


def test_the_instructor_grades_and_releases_feedback_from_jupyterlabs_terminal(course, new_page):
    """The hub guide's loop typed into JupyterLab's terminal (a login shell: PATH from the course's profile script),
    as the instructor, no sudo typed: release, collect (the forged hand-in is refused again: exit 1), grade
    (sandboxed, through the door), release feedback. nbgrader's own autograde is refused there, naming
    attnkit grade."""
    page = new_page()
    log_in(page, "instructor", "instructor-terminal")
    terminal(page)
    home = Path("/home/instructor")
    page.keyboard.type("cd ~/attention-kit && clear")
    page.keyboard.press("Enter")
    steps = [(f"nbgrader release_assignment {PS1} --force", "release.log", 0),
             (f"attnkit collect {PS1}", "collect.log", 1), (f"attnkit grade {PS1}", "grade.log", 0),
             (f"attnkit release-feedback {PS1}", "feedback.log", 0), (f"nbgrader autograde {PS1}", "autograde.log", 1)]
    for line, log, expected in steps:
        status = type_command(page, line, log, home / "step.status")
        if log == "grade.log":
            shot(page, "instructor-03-terminal-graded")
        assert status == expected, f"{line}: exit {status}\n{(home / log).read_text()[-3000:]}"
    shot(page, "instructor-03-terminal")
    assert "0 collected, 2 already collected, 1 refused" in (home / "collect.log").read_text()
    refusal = (home / "autograde.log").read_text()
    assert "attnkit grade" in refusal and "unsandboxed" in refusal, refusal
    with Gradebook(f"sqlite:///{course.course_dir()}/gradebook.db", course.COURSE_ID) as gradebook:
        for student in ANSWERS:
            SCORES[student] = gradebook.find_submission(PS1, student).score
    assert SCORES["student1"] == AUTOGRADED["student1"], SCORES
    assert SCORES["student2"] < SCORES["student1"], SCORES
    released = (home / "feedback.log").read_text()
    assert "student1" in released and "student2" in released, released
    owners = {p.owner() for p in course.course_dir().rglob("*")}
    assert owners == {"instructor"}, f"files in the course folder not the instructor's: {owners}"


def test_the_instructor_sees_the_graded_submissions_in_formgrader(course, new_page):
    """The Formgrader lists PS1 once with its two submissions; its Autograde button grades student1's alone
    the kit's way (attnkit grade --student: the canary, then the sandbox through the door), the score and
    the classmate's result unchanged, the dialog wrapped."""
    if not SCORES:
        pytest.skip("nothing graded (the instructor's test failed)")
    page = new_page()
    log_in(page, "instructor", "instructor")
    frame = formgrader(page)
    row = frame.locator("tr", has_text=PS1).filter(has_not_text=f"{PS1}_")
    row.wait_for()
    shot(page, "instructor-01-formgrader")
    headers = frame.locator("tr").first.locator("th").all_inner_texts()
    cells = row.locator("td").all_inner_texts()
    assert cells[headers.index("# Submissions")].strip() == "2", dict(zip(headers, cells))
    copy = course.course_dir() / "autograded" / "student1" / PS1 / f"{PS1}.ipynb"
    before = copy.read_bytes()
    row.locator(f"a[href$='/manage_submissions/{PS1}']").click()      # the submissions of PS1
    student = frame.locator("tr", has_text="student1")
    student.locator(".autograde a").click()
    text = " ".join(modal_text(page, frame, "instructor-04-autograded", wrapped=True).split())
    assert "Successfully autograded" in text and f"$ attnkit grade --student=student1 -- {PS1}" in text, text
    assert "canary passed" in text and "1 of 1 submissions graded" in text and "student2" not in text, text
    with Gradebook(f"sqlite:///{course.course_dir()}/gradebook.db", course.COURSE_ID) as gradebook:
        assert {s: gradebook.find_submission(PS1, s).score for s in ANSWERS} == SCORES
    assert copy.read_bytes() == before, "grading the same hand-in again changed its autograded copy"
    report = json.loads((course.course_dir() / "grades" / "report.json").read_text())
    assert report["students"]["student2"][PS1]["status"] == "graded", "the classmate's result was lost"


def test_the_formgraders_generate_feedback_button_writes_the_offline_page(course, new_page, browser):
    """The Formgrader's Generate Feedback button runs nbgrader's GenerateFeedback, whose exporter the hub's
    configuration names (attnkit_grader.offline.FeedbackExporter): the page it writes is the finished one attnkit
    release-feedback hands out, read here with the network and scripts off: formulas drawn, no request, no TeX."""
    if not SCORES:
        pytest.skip("nothing graded (the instructor's test failed)")
    written = course.course_dir() / "feedback" / "student1" / PS1 / f"{PS1}.html"
    written.unlink(missing_ok=True)
    page = new_page()
    log_in(page, "instructor", "instructor-generate-feedback")
    frame = formgrader(page)
    frame.locator("tr", has_text=PS1).filter(has_not_text=f"{PS1}_").locator(
        f"a[href$='/manage_submissions/{PS1}']").click()
    frame.locator("tr", has_text="student1").locator(".generate-feedback a").click()
    text = modal_text(page, frame, "instructor-05-feedback-generated")
    assert "Successfully generated feedback" in text, text
    html = written.read_text(encoding="utf-8")
    assert "<script" not in html and "cdnjs" not in html and "$$" not in html
    with offline_page(browser, written, 5) as reader:                   # problem set 1's text has 7 formulas
        shown = reader.locator("body").inner_text()
        assert "\\mathbf" not in shown and "$(" not in shown and "Score" in shown
        reader.screenshot(path=str(ARTIFACTS / "instructor-06-generated-feedback-offline.png"))


@pytest.mark.parametrize("student", ["student1", "student2"])
def test_a_student_fetches_feedback_and_reads_the_score(course, new_page, student):
    if not SCORES:
        pytest.skip("nothing graded (the instructor's test failed)")
    page = new_page()
    log_in(page, student, f"{student}-feedback")
    assignment_list(page)
    submitted = list_item(page, "submitted", EDITIONS[student])
    submitted.get_by_role("button", name="Fetch Feedback").click()
    link = submitted.get_by_text("view feedback")
    link.wait_for()
    shot(page, f"{student}-07-feedback-fetched")
    link.click()          # the file browser goes to the feedback's folder; the page opens in JupyterLab
    page.locator(".jp-DirListing-item", has_text=f"{PS1}.html").dblclick()
    viewer = page.locator(".jp-HTMLViewer:visible iframe")
    viewer.wait_for()
    body = page.frame_locator(".jp-HTMLViewer:visible iframe").locator("body")
    # nbgrader's frame in the hand-in's language: "Score: 6.5 / 11" for student1, "note : 6.5 / 11" for student2
    word = "note" if student == "student2" else "Score"
    body.get_by_text(re.compile(rf"\b{word}\s*:", re.I)).first.wait_for()
    shot(page, f"{student}-08-feedback")
    text = body.inner_text()
    score = re.search(rf"\b{word}\s*:\s*([\d.]+)\s*/\s*([\d.]+)", text, re.I)
    assert score, text[:500]
    if student == "student2":
        assert "Score" not in text and "Test cell" not in text, text[:500]
    assert float(score.group(1)) == SCORES[student] and float(score.group(2)) == 11.0, score.group(0)
    # complete as JupyterLab shows it, with no script run: formulas drawn (attnkit release-feedback typeset them),
    # no TeX left, and the verdict lines wrap inside the viewer (none is cut at the right edge)
    frame = page.frame_locator(".jp-HTMLViewer:visible iframe")
    assert frame.locator("mjx-container svg").count() >= 5           # problem set 1's text has 7 formulas
    assert "\\mathbf" not in text and "$(" not in text and "\\mathcal" not in text
    # the grader's verdicts under each test cell, in the hand-in's language: student2 worked in French
    if student == "student2":
        assert "Vérifié par le correcteur en dehors du notebook" in text and "Checked by the grader" not in text
        verdicts = frame.locator("pre", has_text="ÉCHOUÉE")
    else:
        assert "Checked by the grader outside the notebook" in text
        verdicts = frame.locator("pre", has_text="passed ")
    assert verdicts.count() > 0
    assert all(verdicts.nth(i).evaluate("e => e.scrollWidth <= e.clientWidth") for i in range(verdicts.count()))
    if student == "student2":
        verdicts.first.scroll_into_view_if_needed()
        shot(page, f"{student}-09-feedback-verdicts")


@pytest.mark.parametrize("lecture", LECTURES)
def test_a_lecture_runs_all_without_error_and_with_its_figures(course, new_page, lecture):
    committed = json.loads((EDITION / "course" / lecture).read_text())
    figures = sum(1 for cell in committed["cells"] for output in cell.get("outputs", [])
                  if "image/png" in output.get("data", {}))
    page = new_page()
    log_in(page, "student3", f"lecture-{lecture[:-6]}")
    page.goto(f"{URL}/user/student3/lab/tree/course/{lecture}?reset")   # ?reset: no tabs from before
    notebook = page.locator(".jp-NotebookPanel:visible")
    notebook.locator(".jp-Cell").first.wait_for()
    # the committed outputs first cleared, so that what is checked below is what this run produced
    page.locator(".lm-MenuBar-itemLabel", has_text="Edit").click()
    page.locator(".lm-Menu-itemLabel", has_text="Clear Outputs of All Cells").click()
    assert notebook.locator(".jp-OutputArea-output").count() == 0
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    started = time.monotonic()
    prompts = notebook.locator(".jp-CodeCell .jp-InputArea-prompt")
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""", timeout=300_000, polling=500)
    seconds = time.monotonic() - started
    shot(page, f"lecture-{lecture[:-6]}")
    errors = notebook.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert errors.count() == 0, f"{lecture}: error output after Run All: {errors.first.inner_text()[:800]}"
    images = notebook.locator(".jp-OutputArea-output img")
    assert images.count() == figures, f"{lecture}: {images.count()} figures rendered, {figures} expected"
    print(f"{lecture}: {prompts.count()} code cells ran in {seconds:.0f} s, {figures} figures")


@pytest.mark.parametrize("locale, file_menu", [("fr_FR", "Fichier"), ("zh_CN", "文件")])
def test_jupyterlab_speaks_the_students_language(course, new_page, locale, file_menu):
    """The hub's environment holds JupyterLab's French and Chinese language packs: student3 switches the
    language as the students' guide says (the setting Settings -> Language writes), JupyterLab reloads in it, and back."""
    page = new_page()
    log_in(page, "student3", f"language-{locale}")
    api = f"{URL}/user/student3/lab/api"
    xsrf = next((c["value"] for c in page.context.cookies() if c["name"] == "_xsrf"), "")
    headers = {"X-XSRFToken": xsrf, "Content-Type": "application/json"}
    installed = page.request.get(f"{api}/translations/").json()["data"]
    assert {"fr_FR", "zh_CN"} <= set(installed), installed
    setting = f"{api}/settings/@jupyterlab/translation-extension:plugin"
    try:
        answer = page.request.put(setting, headers=headers, data=json.dumps({"raw": json.dumps({"locale": locale})}))
        assert answer.ok, answer.text()
        page.reload()
        page.locator(".lm-MenuBar-itemLabel", has_text=file_menu).wait_for(timeout=60_000)
        shot(page, f"language-{locale}")
    finally:
        page.request.put(setting, headers=headers, data=json.dumps({"raw": json.dumps({"locale": "en"})}))
