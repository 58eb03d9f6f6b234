#include <stddef.h>
#include "scan.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_AVX2_KERNEL 1
#endif

// accumulate_generic is the portable kernel: plain loops a compiler
// vectorises for the target it builds for.
static void accumulate_generic(const int8_t *data, int stride, int n, const int32_t *cols, const int16_t *q, int nq, int32_t *acc) {
	for (int i = 0; i < n; i++) {
		acc[i] = 0;
	}
	int t = 0;
	for (; t + 4 <= nq; t += 4) {
		const int8_t *c0 = data + (ptrdiff_t)cols[t] * stride;
		const int8_t *c1 = data + (ptrdiff_t)cols[t + 1] * stride;
		const int8_t *c2 = data + (ptrdiff_t)cols[t + 2] * stride;
		const int8_t *c3 = data + (ptrdiff_t)cols[t + 3] * stride;
		int32_t q0 = q[t], q1 = q[t + 1], q2 = q[t + 2], q3 = q[t + 3];
		for (int i = 0; i < n; i++) {
			acc[i] += q0 * c0[i] + q1 * c1[i] + q2 * c2[i] + q3 * c3[i];
		}
	}
	for (; t < nq; t++) {
		const int8_t *c0 = data + (ptrdiff_t)cols[t] * stride;
		int32_t q0 = q[t];
		for (int i = 0; i < n; i++) {
			acc[i] += q0 * c0[i];
		}
	}
}

#ifdef HAVE_AVX2_KERNEL
// pair multiplies 16 rows of two columns by their query weights (packed
// as two int16 in each 32-bit lane of w) and adds the products into
// lo (rows 0-7) and hi (rows 8-15).
__attribute__((target("avx2"))) static inline void pair(const int8_t *a, const int8_t *b, __m256i w, __m256i *lo, __m256i *hi) {
	__m128i va = _mm_loadu_si128((const __m128i *)a);
	__m128i vb = _mm_loadu_si128((const __m128i *)b);
	__m256i l = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(va, vb)); // a0 b0 a1 b1 ... a7 b7
	__m256i h = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(va, vb)); // a8 b8 ... a15 b15
	*lo = _mm256_add_epi32(*lo, _mm256_madd_epi16(l, w));
	*hi = _mm256_add_epi32(*hi, _mm256_madd_epi16(h, w));
}

static inline int32_t pack(int16_t a, int16_t b) {
	return (int32_t)((uint32_t)(uint16_t)a | ((uint32_t)(uint16_t)b << 16));
}

// accumulate_avx2 is accumulate_generic with AVX2: 16 rows of eight (then
// four, then two) columns a step. It reads whole groups of 16 rows, up to
// the block's stride.
__attribute__((target("avx2"))) static void accumulate_avx2(const int8_t *data, int stride, int n, const int32_t *cols, const int16_t *q, int nq, int32_t *acc) {
	int m = (n + 15) & ~15;
	if (m > stride) {
		m = stride;
	}
	for (int i = 0; i < m; i += 8) {
		_mm256_storeu_si256((__m256i *)(acc + i), _mm256_setzero_si256());
	}
	int t = 0;
	// Eight columns a pass while there are: the running sums are loaded
	// and stored once for eight columns instead of four.
	for (; t + 8 <= nq; t += 8) {
		const int8_t *c[8];
		for (int j = 0; j < 8; j++) {
			c[j] = data + (ptrdiff_t)cols[t + j] * stride;
		}
		__m256i w01 = _mm256_set1_epi32(pack(q[t], q[t + 1]));
		__m256i w23 = _mm256_set1_epi32(pack(q[t + 2], q[t + 3]));
		__m256i w45 = _mm256_set1_epi32(pack(q[t + 4], q[t + 5]));
		__m256i w67 = _mm256_set1_epi32(pack(q[t + 6], q[t + 7]));
		for (int i = 0; i < m; i += 16) {
			__m256i lo = _mm256_loadu_si256((const __m256i *)(acc + i));
			__m256i hi = _mm256_loadu_si256((const __m256i *)(acc + i + 8));
			pair(c[0] + i, c[1] + i, w01, &lo, &hi);
			pair(c[2] + i, c[3] + i, w23, &lo, &hi);
			pair(c[4] + i, c[5] + i, w45, &lo, &hi);
			pair(c[6] + i, c[7] + i, w67, &lo, &hi);
			_mm256_storeu_si256((__m256i *)(acc + i), lo);
			_mm256_storeu_si256((__m256i *)(acc + i + 8), hi);
		}
	}
	for (; t + 4 <= nq; t += 4) {
		const int8_t *c0 = data + (ptrdiff_t)cols[t] * stride;
		const int8_t *c1 = data + (ptrdiff_t)cols[t + 1] * stride;
		const int8_t *c2 = data + (ptrdiff_t)cols[t + 2] * stride;
		const int8_t *c3 = data + (ptrdiff_t)cols[t + 3] * stride;
		__m256i w01 = _mm256_set1_epi32(pack(q[t], q[t + 1]));
		__m256i w23 = _mm256_set1_epi32(pack(q[t + 2], q[t + 3]));
		for (int i = 0; i < m; i += 16) {
			__m256i lo = _mm256_loadu_si256((const __m256i *)(acc + i));
			__m256i hi = _mm256_loadu_si256((const __m256i *)(acc + i + 8));
			pair(c0 + i, c1 + i, w01, &lo, &hi);
			pair(c2 + i, c3 + i, w23, &lo, &hi);
			_mm256_storeu_si256((__m256i *)(acc + i), lo);
			_mm256_storeu_si256((__m256i *)(acc + i + 8), hi);
		}
	}
	for (; t < nq; t += 2) {
		const int8_t *c0 = data + (ptrdiff_t)cols[t] * stride;
		const int8_t *c1 = c0;
		int16_t q1 = 0;
		if (t + 1 < nq) {
			c1 = data + (ptrdiff_t)cols[t + 1] * stride;
			q1 = q[t + 1];
		}
		__m256i w = _mm256_set1_epi32(pack(q[t], q1));
		for (int i = 0; i < m; i += 16) {
			__m256i lo = _mm256_loadu_si256((const __m256i *)(acc + i));
			__m256i hi = _mm256_loadu_si256((const __m256i *)(acc + i + 8));
			pair(c0 + i, c1 + i, w, &lo, &hi);
			_mm256_storeu_si256((__m256i *)(acc + i), lo);
			_mm256_storeu_si256((__m256i *)(acc + i + 8), hi);
		}
	}
}

static int use_avx2 = -1;
#endif

static int force_generic = 0;

void ingestd_vecscan_force_generic(int on) { force_generic = on; }

static int avx2(void) {
#ifdef HAVE_AVX2_KERNEL
	if (use_avx2 < 0) {
		__builtin_cpu_init();
		use_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
	}
	return use_avx2 && !force_generic;
#else
	return 0;
#endif
}

const char *ingestd_vecscan_kind(void) { return avx2() ? "avx2" : "generic"; }

int ingestd_vecscan(const int8_t *data, int stride, int n, const int32_t *cols, const int16_t *q, int nq,
	const float *scales, const int32_t *groups, const uint8_t *allowed, int nallowed, float mul,
	float threshold, int32_t *acc, int32_t *rows, float *scores) {
#ifdef HAVE_AVX2_KERNEL
	if (avx2()) {
		accumulate_avx2(data, stride, n, cols, q, nq, acc);
	} else
#endif
	{
		accumulate_generic(data, stride, n, cols, q, nq, acc);
	}
	int out = 0;
	for (int i = 0; i < n; i++) {
		float s = (float)acc[i] * scales[i] * mul;
		if (!(s > threshold)) {
			continue;
		}
		if (allowed) {
			int32_t g = groups[i];
			if (g < 0 || g >= nallowed || !allowed[g]) {
				continue;
			}
		}
		rows[out] = i;
		scores[out] = s;
		out++;
	}
	return out;
}
