// The scan kernel of package vecindex: the estimated similarity of every
// row of one block to a query, and the rows above a threshold.
#ifndef INGESTD_VECSCAN_H
#define INGESTD_VECSCAN_H

#include <stdint.h>

// ingestd_vecscan scores the first n rows of a block of int8 vectors stored
// by column (component c of row i at data[c*stride + i]; stride is a
// multiple of 16 and the block holds stride rows): acc[i] = sum over t of
// q[t] * data[cols[t]*stride + i], then score = acc[i] * scales[i] * mul.
// Rows whose group is not allowed (allowed != NULL and groups[i] outside
// [0, nallowed) or allowed[groups[i]] == 0) are skipped; the others with a
// score above threshold are written to rows and scores, in row order. acc
// has room for stride values. It returns how many rows it wrote.
int ingestd_vecscan(const int8_t *data, int stride, int n, const int32_t *cols, const int16_t *q, int nq,
	const float *scales, const int32_t *groups, const uint8_t *allowed, int nallowed, float mul,
	float threshold, int32_t *acc, int32_t *rows, float *scores);

// ingestd_vecscan_kind names the kernel in use: "avx2" or "generic".
const char *ingestd_vecscan_kind(void);

// ingestd_vecscan_force_generic makes ingestd_vecscan use the portable
// kernel (tests compare the two).
void ingestd_vecscan_force_generic(int on);

#endif
