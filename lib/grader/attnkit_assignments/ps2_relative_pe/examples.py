"""What problem set 2's students hand in in the kit's example class, besides the instructor's answers and the
blank release, and the points each must get: ``submissions(kit)`` (the format: ``Kit`` and ``build`` in
examples/make_example_class.py)."""

def submissions(kit):
    reference = kit.answers()

    # Partly right: ignores valid_lens, and hands in the skewed causal attention but not the naive one; a
    # short written answer for the manual grader.
    partial = kit.code_only(reference)
    partial["attention_answer"] = kit.replace_once(
        partial["attention_answer"], "weights = attnkit.masked_softmax(scores, valid_lens)",
        "weights = torch.softmax(scores, dim=-1)   # TODO: valid_lens")
    naive_start = partial["causal_answer"].index("    L, d = queries.shape[-2], queries.shape[-1]\n    i = ")
    naive_end = partial["causal_answer"].index("def causal_relative_attention(")
    partial["causal_answer"] = (partial["causal_answer"][:naive_start] + "    raise NotImplementedError  # TODO\n\n\n"
                                + partial["causal_answer"][naive_end:])
    partial["choice_written"] = "Learned for fixed lengths, sinusoidal when there is little data, relative for music."

    def bug(grade_id, old, new):
        return kit.fill(kit.code_only(kit.with_bug(grade_id, old, new)))

    failing = kit.code_only(reference)
    failing["index_answer"] = "import not_a_module\n\n" + failing["index_answer"]
    # A cheater imports the reference solution.
    importing = kit.code_only(reference)
    importing["attention_answer"] = "from attnkit_assignments.ps2_relative_pe.reference import RelativeMultiHeadAttention"
    importing["skew_answer"] = "from attnkit_assignments.ps2_relative_pe.reference import skew"
    importing["causal_answer"] = ("from attnkit_assignments.ps2_relative_pe.reference import (\n"
                                  "    causal_relative_attention, causal_relative_attention_naive)")
    zero = {"test_index": 0.0, "test_rel_attention": 0.0, "test_skew": 0.0, "test_causal": 0.0}
    return {
        # valid_lens ignored: visible mask -0.25, worked case -1, empty rows -0.25, cross-attention parity -1,
        # max_distance 0 (uses valid_lens) -0.5, hidden mask -0.25; naive causal missing: shapes -0.5,
        # skewed == naive -0.5, the worked case (both versions) -1, naive parity -0.75
        "partial": (kit.fill(partial), {"test_rel_attention": 4.75, "test_causal": 2.25}, ("Pat", "Partial")),
        # divides by num_hiddens (a catalogued bug, which the feedback names): every comparison of the
        # values fails (worked case 1, empty rows 0.25, gradient 0.5, self-attention 0.5 + 0.75, cross 1,
        # max_distance 0 0.5, one head 0.5); matching the known mistake, the shapes, default bias, masks,
        # dropout and shift invariance count: 3
        "bug_num_hiddens_scale": (bug("attention_answer", "scores = scores / math.sqrt(head_dim)",
                                      "scores = scores / queries.shape[-1]                            # divides by num_hiddens"),
                                  {"test_rel_attention": 3.0}, ("Sam", "Scale")),
        # index: small case -1, edge cases -0.5, saturation -0.5; the numbers are a known mistake's (i - j),
        # so dtype and Toeplitz count: 1; attention: every comparison that sees the sign fails (worked 1,
        # empty rows 0.25, gradient 0.5, self-attention 1.25, cross 1, one head 0.5): 3.5
        "bug_sign_flip": (bug("index_answer",
                              "offsets = torch.arange(num_keys)[None, :] - torch.arange(num_queries)[:, None]",
                              "offsets = torch.arange(num_queries)[:, None] - torch.arange(num_keys)[None, :]"),
                          {"test_index": 1.0, "test_rel_attention": 3.5}, ("Simone", "Sign")),
        # index: small case -1, edge cases -0.5, saturation -0.5, matching the catalogue's unclipped index:
        # dtype and Toeplitz count (1); attention: rows j - i + k fall outside the table once |j - i| > k,
        # so every check that calls forward fails (IndexError from nn.Embedding, which the catalogue's
        # variant does not raise in the same words): the table shapes alone count for nothing, 0
        "bug_no_clip": (bug("index_answer", "return offsets.clamp(min=-max_distance, max=max_distance) + max_distance",
                            "return offsets + max_distance"),
                        {"test_index": 1.0, "test_rel_attention": 0.0}, ("Cleo", "Clip")),
        # a catalogued bug: the outputs miss the a^V term (worked 1, empty rows 0.25, gradient 0.5,
        # self-attention output 0.75, cross 1, max_distance 0 0.5, one head 0.5); the self-attention
        # weights are right (0.5) and the structure, masks, dropout and shift count: 3.5
        "bug_no_value_term": (bug("attention_answer",
                                  'z = torch.bmm(weights, v) + torch.einsum("bij,ijd->bid", weights, a_v)',
                                  "z = torch.bmm(weights, v)"),
                              {"test_rel_attention": 3.5}, ("Val", "Value")),
        # skew: small case -1, exact gather -1.5, not a catalogued variant, so shape/dtype/unchanged count
        # for nothing (-1.5); causal: skewed == naive -0.5, worked case -1, skewed parity -0.75, memory -1
        "bug_skew_reversed": (bug("skew_answer", "padded = torch.cat([zeros, X], dim=-1)",
                                  "padded = torch.cat([zeros, X.flip(-1)], dim=-1)               # E taken as distance 0 first"),
                              {"test_skew": 0.0, "test_causal": 1.75}, ("Rey", "Reversed")),
        # the first answer cell stops at `import not_a_module`, so relative_position_index is never
        # defined: the index cell errors (0), the attention calls it and fails all but its table shapes,
        # which alone count for nothing; skew and the causal attention do not need it and keep full marks
        "import_error": (kit.fill(failing), {"test_index": 0.0, "test_rel_attention": 0.0,
                                             "reason": "ModuleNotFoundError in the first answer cell (import not_a_module)"}, ("Imre", "Import")),
        # own relative_position_index (full marks); everything else imported from the reference solution
        "cheat_import": (kit.fill(importing), {**zero, "test_index": 3.0,
                                               "reason": "imports the reference solutions (attnkit_assignments): "
                                                         "those cells score 0"}, ("Chet", "Importer")),
    }
