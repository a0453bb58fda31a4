/* test.h: a tiny test harness. TEST(name) defines a test that registers itself
 * (constructor attribute), so test files need no shared list. A failed CHECK*
 * (or test_fail) prints file:line and ends its test there, so a failed set-up
 * cannot run on into a crash; run_tests prints "N passed, N failed" last,
 * after a crash too. */
#ifndef TFM_TEST_H
#define TFM_TEST_H

#include <math.h>
#include <stdio.h>

typedef void (*TestFn)(void);
void test_register(const char *name, const char *file, TestFn fn);
/* Reports a failure and ends the running test (it does not return). */
_Noreturn void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Folder of committed fixtures (tests/data), and the shared folder (../shared). */
const char *test_data_dir(void);
const char *test_shared_dir(void);
/* A fresh scratch folder for this process (removed at exit). */
const char *test_tmpdir(void);
/* Writes text to dir/name and returns the path (static buffer, reused). */
const char *test_write_file(const char *name, const char *text);
/* The whole file at path, NUL-terminated (malloc'd; NULL if unreadable). */
char *test_read_file(const char *path);
/* The names in dir for which keep(dir, name) is true ("." and ".." never),
 * sorted, however many: *names is a malloc'd array of malloc'd names (the
 * caller frees both). Returns the count (0 when dir cannot be opened). */
int test_list_dir(const char *dir, int (*keep)(const char *dir, const char *name),
                  char ***names);

#define TEST(name)                                                       \
    static void name(void);                                              \
    __attribute__((constructor)) static void name##_register(void)       \
    { test_register(#name, __FILE__, name); }                            \
    static void name(void)

#define CHECK(cond)                                                      \
    do { if (!(cond)) test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); } while (0)

#define CHECK_EQ_INT(a, b)                                               \
    do { long long a_ = (long long)(a), b_ = (long long)(b);             \
         if (a_ != b_) test_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", \
                                 #a, a_, #b, b_); } while (0)

#define CHECK_NEAR(a, b, tol)                                            \
    do { double a_ = (double)(a), b_ = (double)(b);                      \
         if (!(fabs(a_ - b_) <= (tol)))                                  \
             test_fail(__FILE__, __LINE__, "%s = %.9g, expected %.9g (tol %g)", \
                       #a, a_, b_, (double)(tol)); } while (0)

#define CHECK_STR(a, b)                                                  \
    do { const char *a_ = (a), *b_ = (b);                                \
         if (!a_ || !b_ || strcmp(a_, b_) != 0)                          \
             test_fail(__FILE__, __LINE__, "%s = \"%s\", expected \"%s\"", \
                       #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } while (0)

#endif
