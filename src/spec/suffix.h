/* Suffix-automaton drafter: proposes the continuation of the longest suffix of the token
 * sequence (prompt + everything generated) that occurred earlier in it. No second model.
 *
 * The automaton is built online (one state per prefix plus clones). For the whole sequence
 * S[0..n), link(last) is the state of the longest suffix that also ends earlier; its
 * first_end is the end of the FIRST such occurrence, and the draft is the tokens that
 * followed it: S[first_end + 1 ..]. Ties are therefore broken towards the earliest
 * occurrence (the brute-force reference in tests/test_spec.c uses the same rule). */
#ifndef STRATA_SUFFIX_H
#define STRATA_SUFFIX_H
#include <stdint.h>

typedef struct suffix_drafter suffix_drafter;

suffix_drafter *suffix_drafter_new(void);
void suffix_drafter_free(suffix_drafter *d);
void suffix_drafter_reset(suffix_drafter *d);
/* Append one token. 0, or -1 when out of memory (the drafter then proposes nothing). */
int  suffix_drafter_push(suffix_drafter *d, int32_t tok);
int  suffix_drafter_len(const suffix_drafter *d);
/* Longest earlier-occurring suffix: its length (0: none) and the end of its first
 * occurrence (index of its last token) in *first_end. */
int  suffix_drafter_match(const suffix_drafter *d, int *first_end);
/* Up to max_n tokens continuing the longest match of length >= min_match (past the end of the
 * sequence, the repeating stretch the match overlaps goes on: "a b a b" drafts "a b a ..");
 * returns the count: max_n when there is a match, else 0. */
int  suffix_drafter_draft(const suffix_drafter *d, int min_match, int max_n, int32_t *out);
#endif
