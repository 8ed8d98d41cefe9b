"""What problem set 3's students hand in in the kit's example class, besides the instructor's answers and the
blank release, and the points each must get: ``submissions(kit)`` (the format: ``Kit`` and ``build`` in
examples/make_example_class.py). The points of a catalogued mistake are the catalogue's (bugs.EXPECTED)."""

# Code only, never a comment: the French and Chinese editions' answers carry translated comments, and every
# edition's example class is built with these replacements.
_SLOPES = ("slopes = [2.0 ** (-8.0 * h / p) for h in range(1, p + 1)]",
           "slopes = [2.0 ** (-8.0 * h / num_heads) for h in range(1, num_heads + 1)]")
_SLOPES_RETURNED = ("slopes + odd_of_2p[:num_heads - p]", "slopes")
_DISTANCE = "distance = key_positions[None, :] - query_positions[:, None]"


def submissions(kit):
    reference = kit.answers()

    # Partly right: RoPE and its attention right; the slopes by 2^(-8h/n) for every head count (the catalogue's
    # alibi_formula_for_any_count), and the causal ALiBi attention without its causal mask (alibi_no_causal_mask);
    # a short written answer for the manual grader.
    partial = kit.code_only(reference)
    for old, new in (_SLOPES, _SLOPES_RETURNED):
        partial["slopes_answer"] = kit.replace_once(partial["slopes_answer"], old, new)
    partial["alibi_attention_answer"] = kit.replace_once(
        partial["alibi_attention_answer"], 'attn_mask = bias.masked_fill(future, float("-inf"))',
        "attn_mask = bias                                                                 # TODO: causal")
    partial["rope_base_written"] = "The base sets how fast the pairs turn."

    # The bias's sign flipped: distant keys favoured (alibi_bias_sign); the attention calls alibi_bias and fails
    # with it.
    sign = kit.code_only(kit.with_bug("bias_answer", _DISTANCE,
                                      "distance = query_positions[:, None] - key_positions[None, :]"))

    # A cheater imports every answer from the reference solution.
    importing = kit.code_only(reference)
    for cell, names in (("rope_answer", "rotary_embedding"), ("rotary_attention_answer", "RotaryMultiHeadAttention"),
                        ("slopes_answer", "alibi_slopes"), ("bias_answer", "alibi_bias"),
                        ("alibi_attention_answer", "causal_alibi_attention")):
        importing[cell] = f"from attnkit_assignments.ps3_rope.reference import {names}"
    zero = {"test_rope": 0.0, "test_rotary_attention": 0.0, "test_slopes": 0.0, "test_bias": 0.0,
            "test_alibi_attention": 0.0}
    return {
        "partial": (kit.fill(partial), {"test_slopes": 0.5, "test_alibi_attention": 0.5}, ("Pat", "Partial")),
        "bug_sign_flip": (kit.fill(sign), {"test_bias": 0.25, "test_alibi_attention": 0.5}, ("Simone", "Sign")),
        "cheat_import": (kit.fill(importing), {**zero, "reason": "imports the reference solutions "
                                                                  "(attnkit_assignments): those cells score 0"},
                         ("Chet", "Importer")),
    }
