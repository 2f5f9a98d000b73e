/*
 * bl_test.h
 *	  A minimal unit-test harness for the decoder's C tests.
 *
 * Each test program runs its cases and prints one TAP-like line per case:
 * "ok - name" or "not ok - name: reason".  The suite runner (test/run.sh)
 * counts these lines.  A program exits 1 if any case failed.
 */
#ifndef BL_TEST_H
#define BL_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int	bl_test_failures;
static int	bl_test_case_failed;
static const char *bl_test_case_name;

#define BL_TEST_BEGIN(name) \
	do { bl_test_case_name = (name); bl_test_case_failed = 0; } while (0)

#define BL_TEST_END() \
	do { \
		if (!bl_test_case_failed) \
			printf("ok - %s\n", bl_test_case_name); \
		else \
			bl_test_failures++; \
		fflush(stdout); \
	} while (0)

#define BL_FAIL(...) \
	do { \
		if (!bl_test_case_failed) { \
			printf("not ok - %s: ", bl_test_case_name); \
			printf(__VA_ARGS__); \
			printf(" (%s:%d)\n", __FILE__, __LINE__); \
		} \
		bl_test_case_failed = 1; \
	} while (0)

#define BL_CHECK(cond) \
	do { if (!(cond)) BL_FAIL("check failed: %s", #cond); } while (0)

#define BL_CHECK_STR(got, want) \
	do { \
		const char *g_ = (got), *w_ = (want); \
		if (g_ == NULL || strcmp(g_, w_) != 0) \
			BL_FAIL("got [%s], want [%s]", g_ ? g_ : "(null)", w_); \
	} while (0)

#define BL_CHECK_INT(got, want) \
	do { \
		long long g_ = (long long) (got), w_ = (long long) (want); \
		if (g_ != w_) \
			BL_FAIL("%s = %lld, want %lld", #got, g_, w_); \
	} while (0)

#define BL_TEST_EXIT() return bl_test_failures ? 1 : 0

#endif							/* BL_TEST_H */
