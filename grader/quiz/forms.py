"""Earlier forms of a quiz file, read and translated into the current one, each with a note.

The quiz file's schema grows additively; where an earlier form cannot be read as it is, it is
translated here before validation, and the note says what to write instead (check-lab lists them):
  a text answer as a list of phrases    (the first form, each compared whole; still the short form
                                        of a key with words only, so no note) -> the key's `words`
  `reject: [...]` beside such a list    (forms that made an answer wrong) -> the key's `others`,
                                        each form a candidate of its own
  an exam form whose hard questions     (exam forms once kept them) -> dropped: an exam form
  carry their reveals                   shows no reveal
"""


def translate(data):
    """(data in the current form, [notes]) of a quiz file's data (a mapping, left unchanged)."""
    data, notes = dict(data), []
    questions = data.get("questions")
    if isinstance(questions, list):
        data["questions"] = [_question(entry, number, notes) for number, entry in enumerate(questions, 1)]
    hard = data.get("hard_questions")
    keyed = isinstance(questions, list) and any(isinstance(q, dict) and q.get("answer") is not None
                                                for q in questions)
    if isinstance(questions, list) and not keyed and isinstance(hard, list) and \
            any(isinstance(h, dict) and h.get("reveal") is not None for h in hard):
        data["hard_questions"] = [{k: v for k, v in h.items() if k != "reveal"} if isinstance(h, dict) else h
                                  for h in hard]
        notes.append("an exam form whose hard questions carry reveals (an earlier form): the reveals are "
                     "dropped, since an exam form shows none; remove them from the file")
    return data, notes


def _question(entry, number, notes):
    if not isinstance(entry, dict) or entry.get("type") != "text":
        return entry
    where = f"question {entry.get('id', '')!r} (#{number})"
    entry, answer, reject = dict(entry), entry.get("answer"), entry.get("reject")
    phrases = isinstance(answer, list) and all(isinstance(p, str) for p in answer)
    if "reject" in entry and phrases and isinstance(reject, list) and all(isinstance(r, str) for r in reject):
        entry.pop("reject")
        entry["answer"] = {"words": answer, "others": {form: [form] for form in reject if form.strip()}}
        notes.append(f"{where}: `answer: [...]` with `reject: [...]` is an earlier form, read as "
                     "answer: {words: [...], others: {...}} (each rejected form a wrong candidate); write that")
    elif phrases and answer:            # the short form of a key with words only: no note
        entry["answer"] = {"words": answer}
    return entry
