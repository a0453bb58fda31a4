/* main: looks up the subcommand, runs it, prints the one "tfm: " error line
 * and maps the status to the exit code (0 ok, 1 runtime error, 2 usage,
 * 128+signal when interrupted). The only place that prints errors, exits or
 * re-executes the process, and so also the home of the signal handlers. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "nn/blas.h"
#include "nn/gemm_bf16.h"
#include "cli/cmds.h"
#include "nn/packed_int8.h"
#include "nn/packed_linear.h"
#include "base/text.h"
#include "base/version.h"
#include "dist/dist.h"

/* ---- signals: a stop request for `tfm train` ---- */

static TrainStop train_stop;                 /* what the handler asks of `tfm train` */
static bool announce_stop = false;          /* set before the handlers are installed */
static bool stderr_tty = false;             /* so is this: a live progress line may be open */

static void say(const char *msg, size_t len)
{
    /* below the live progress line, not glued to its end */
    if (stderr_tty && write(STDERR_FILENO, "\n", 1) < 0) return;
    if (write(STDERR_FILENO, msg, len) < 0) { /* nothing to do in a handler */ }
}

/* OpenBLAS 0.3.21 reserves its buffers (~128 MB of address space a thread)
 * while it loads, before main, and when an address-space limit (ulimit -v)
 * makes that fail it retries forever (OpenBLAS issue 5289, fixed in 0.3.30).
 * Under such a limit a timer, set before any library starts (the
 * executable's .preinit_array runs first), turns that hang into an error
 * line; main stops the timer. */
static char startup_msg[192];
static size_t startup_msg_len;

static void on_startup_timeout(int sig)
{
    (void)sig;
    say(startup_msg, startup_msg_len);
    _exit(1);
}

static void guard_library_start(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return;
    int n = snprintf(startup_msg, sizeof startup_msg, "tfm: cannot start: OpenBLAS cannot "
                     "reserve its buffers within the address-space limit (ulimit -v) of %llu MB; "
                     "raise it (about 128 MB a thread, plus the model)\n",
                     (unsigned long long)(r.rlim_cur >> 20));
    startup_msg_len = n > 0 && (size_t)n < sizeof startup_msg ? (size_t)n : 0;
    signal(SIGALRM, on_startup_timeout);
    alarm(5);
}

__attribute__((section(".preinit_array"), used))
static void (*const run_before_libraries)(void) = guard_library_start;

/* SIGINT, SIGTERM, SIGHUP. Only async-signal-safe calls in here. */
static void on_signal(int sig)
{
    int saved_errno = errno;        /* write may fail; the interrupted code reads errno */
    if (!train_stop.started) {
        /* set-up (vocabulary, data, loading): nothing to save, and BPE
         * learning on a big corpus may take minutes; temp files left in
         * out_dir are removed by the next run */
        static const char msg[] = "tfm: interrupted before the first step; nothing was saved\n";
        say(msg, sizeof msg - 1);
        _exit(128 + sig);
    }
    if (train_stop.signo && sig == SIGINT) {
        /* Ctrl-C twice. Only SIGINT: `timeout` and service managers may
         * send one SIGTERM to the process and again to its group. */
        static const char msg[] = "tfm: stopped at once, without saving\n";
        say(msg, sizeof msg - 1);
        _exit(128 + sig);
    }
    if (!train_stop.signo) {
        /* said at once: the step may take seconds */
        static const char msg[] = "tfm: stopping: finishing this step, then saving last.tfm "
                                  "(Ctrl-C again stops at once, without saving)\n";
        if (announce_stop) say(msg, sizeof msg - 1);
        train_stop.signo = sig;
    }
    errno = saved_errno;
}

TrainStop *cli_stop_on_signals(bool announce)
{
    announce_stop = announce;
    stderr_tty = isatty(STDERR_FILENO);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask);        /* one handler at a time */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);   /* a closed terminal: save, as for SIGTERM */
    /* a progress reader that goes away (`| head`) must not kill the run:
     * writes to it fail quietly instead */
    signal(SIGPIPE, SIG_IGN);
    return &train_stop;
}

/* ---- signals: an output file being written ---- */

static char pending_tmp[4096];          /* the temporary file; "" when none */
static char pending_msg[4096 + 64];
static size_t pending_msg_len;

static void on_signal_remove_output(int sig)
{
    /* before the rename the temporary file is there and the output is not
     * written; after it, unlink fails and the output is whole */
    if (pending_tmp[0] && unlink(pending_tmp) == 0) say(pending_msg, pending_msg_len);
    _exit(128 + sig);
}

void cli_remove_on_signals(const char *tmp, const char *output)
{
    int n = tmp ? snprintf(pending_msg, sizeof pending_msg, "tfm: interrupted: %s was not "
                           "written\n", output) : 0;
    if (!tmp || strlen(tmp) >= sizeof pending_tmp || n <= 0 || (size_t)n >= sizeof pending_msg) {
        pending_tmp[0] = '\0';
        return;
    }
    pending_msg_len = (size_t)n;
    stderr_tty = isatty(STDERR_FILENO);
    memcpy(pending_tmp, tmp, strlen(tmp) + 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal_remove_output;
    sigfillset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

void cli_output_written(void)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    pending_tmp[0] = '\0';
}

typedef struct {
    const char *name;
    TfmStatus (*run)(int argc, char **argv, TfmErr *err);
    const char *summary;
} Command;

static const Command commands[] = {
    {"train",     cmd_train,     "train a model from a JSON config"},
    {"translate", cmd_translate, "translate stdin to stdout (greedy or beam search)"},
    {"serve",     cmd_serve,     "translate over HTTP, batching concurrent requests"},
    {"bleu",      cmd_bleu,      "corpus BLEU, identical to sacreBLEU"},
    {"bpe",       cmd_bpe,       "learn, encode and decode BPE subwords"},
    {"average",   cmd_average,   "average the parameters of checkpoints"},
    {"quantize",  cmd_quantize,  "write an int8 model file for translation"},
    {"shortlist", cmd_shortlist, "count a vocabulary shortlist for faster translation"},
    {"info",      cmd_info,      "show a model's config, vocabulary and parameter count"},
};
enum { N_COMMANDS = sizeof commands / sizeof *commands };

static void print_usage(FILE *out)
{
    fprintf(out, "usage: tfm COMMAND [OPTIONS]\n\n"
                 "Transformer machine translation: train, translate, score.\n\n"
                 "commands:\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n  tfm help COMMAND     help for one command (same as tfm COMMAND --help)\n"
                 "  tfm --version        version and the BLAS kernel in use\n");
}

static const Command *find_command(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

/* "unknown command 'translat' (did you mean translate?)", from the table. */
static TfmStatus unknown_command(const char *name, TfmErr *err)
{
    static const char *const top_options[] = {"--help", "--version"};
    const char *what = name[0] == '-' ? "option" : "command";
    TextNearest near;
    text_nearest_start(&near, name, strlen(name), text_typo_edits(strlen(name)));
    for (int i = 0; i < N_COMMANDS && name[0] != '-'; i++)
        text_nearest_offer(&near, commands[i].name, strlen(commands[i].name));
    for (int i = 0; i < 2 && name[0] == '-'; i++)
        text_nearest_offer(&near, top_options[i], strlen(top_options[i]));
    if (near.best)
        return err_set(err, TFM_ERR_USAGE, "unknown %s '%s' (did you mean %s?)", what, name, near.best);
    return err_set(err, TFM_ERR_USAGE, "unknown %s '%s' (see tfm --help)", what, name);
}

/* One line of valid UTF-8 on stderr, whatever the message quotes (a file
 * name, an option, a piece of input): control bytes, the line breaks NEL,
 * U+2028 and U+2029, and bytes that are not UTF-8 are shown as \xNN. */
static void print_error(const char *msg)
{
    fputs("tfm: ", stderr);
    const unsigned char *p = (const unsigned char *)msg;
    size_t n = strlen(msg);
    while (n > 0) {
        uint32_t cp;
        int len = *p < 0x80 ? 1 : text_utf8_decode(p, n, &cp);
        bool line_break = len > 1 && (cp == 0x85 || cp == 0x2028 || cp == 0x2029);
        if (line_break) {
            for (int i = 0; i < len; i++) fprintf(stderr, "\\x%02X", p[i]);
        } else if (len == 0 || *p < 0x20 || *p == 0x7f) {
            fprintf(stderr, "\\x%02X", *p);
            len = 1;
        } else {
            fwrite(p, 1, (size_t)len, stderr);
        }
        p += len;
        n -= (size_t)len;
    }
    fputc('\n', stderr);
}

static int report(TfmStatus status, const TfmErr *err)
{
    if (status == TFM_OK) return 0;
    if (status == TFM_INTERRUPTED) {
        if (err->msg[0] && !err->quiet) print_error(err->msg);
        return 128 + err->signo;
    }
    if (!err->quiet) print_error(err->msg[0] ? err->msg : "unknown error");
    return status == TFM_ERR_USAGE ? 2 : 1;
}

/* The end of a rank of an mpirun job: an error only this rank met ends the
 * whole job (the others would wait for it forever); otherwise every rank
 * leaves together. */
static int finish(TfmStatus status, TfmErr *err)
{
    if (dist_size() > 1 && status != TFM_OK && dist_rank() > 0 && !err->quiet) {
        char msg[sizeof err->msg];
        memcpy(msg, err->msg, sizeof msg);
        /* the message cut to leave room for the prefix */
        snprintf(err->msg, sizeof err->msg, "rank %d: %.*s", dist_rank(),
                 (int)(sizeof msg - 24), msg);
    }
    int code = report(status, err);
    if (status != TFM_OK && status != TFM_INTERRUPTED && !err->collective) {
        fflush(stderr);
        dist_abort(code);
    }
    dist_finalize();
    return code;
}

/* A closed descriptor 0, 1 or 2 would be reused by the next open(): progress
 * notes would land in a checkpoint, a reference file be read as stdin. Each
 * closed one gets /dev/null opened the wrong way round, so that reading or
 * writing it still fails with EBADF, as it would closed. */
static void occupy_closed_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
        if (got >= 0 && got != fd) {
            dup2(got, fd);
            close(got);
        }
    }
}

int main(int argc, char **argv)
{
    alarm(0);                       /* the libraries started: guard_library_start */
    signal(SIGALRM, SIG_DFL);
    occupy_closed_std_fds();
    /* over a file-size limit (ulimit -f), a write fails with EFBIG, which
     * is reported and cleaned up like a full disk, instead of the signal
     * killing tfm in the middle of a save */
    signal(SIGXFSZ, SIG_IGN);
    /* OpenBLAS reads its core type only when it loads: when tfm picks a
     * better one, the program starts again with it (nn/blas.h) */
    if (blas_select_kernel()) {
        execv("/proc/self/exe", argv);
        blas_reexec_failed();
    }
    TfmErr err = {0};
    if (argc < 2)
        return report(err_set(&err, TFM_ERR_USAGE, "missing COMMAND (see tfm --help)"), &err);
    const char *name = argv[1];
    bool top_option = strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
                      strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0;
    if (top_option && argc > 2)
        return report(err_set(&err, TFM_ERR_USAGE, "%s: unexpected argument '%s'", name, argv[2]),
                      &err);
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_usage(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("tfm %s\nOpenBLAS kernel: %s (%s)\nthreads wait: %s\n"
               "translation kernel: %s (packed weights)\nint8 products: %s\n"
               "bf16 products: %s (oneDNN %s)\nMPI: %s\n",
               TFM_VERSION, blas_kernel_name(), blas_kernel_source(), blas_wait_policy(),
               packed_linear_isa(), int8_kernel_name(),
               bf16_available() ? bf16_kernel_name() : bf16_isa_name(), bf16_library_version(),
               dist_library() ? dist_library() : "not built in (make MPI=1)");
        return 0;
    }
    if (strcmp(name, "help") == 0) {
        if (argc < 3 || strcmp(argv[2], "help") == 0) {
            print_usage(stdout);
            return 0;
        }
        const Command *c = find_command(argv[2]);
        if (!c) return report(unknown_command(argv[2], &err), &err);
        char *help_argv[] = {argv[2], "--help", NULL};
        return report(c->run(2, help_argv, &err), &err);
    }
    const Command *c = find_command(name);
    if (!c) return report(unknown_command(name, &err), &err);
    /* under mpirun: join the job (only `tfm train` runs on several ranks) */
    TfmStatus st = dist_init(&argc, &argv, &err);
    if (st == TFM_OK && dist_size() > 1 && strcmp(name, "train") != 0) {
        err.collective = true;
        err.quiet = dist_rank() > 0;
        st = err_set(&err, TFM_ERR_USAGE, "%s: only `tfm train` runs on several MPI ranks", name);
    }
    if (st != TFM_OK) return finish(st, &err);
    /* The command sees argv[0] = its own name, as getopt expects. */
    st = c->run(argc - 1, argv + 1, &err);
    if (fflush(stdout) != 0 && st == TFM_OK)
        st = err_set(&err, TFM_ERR_IO, "stdout: write failed: %s", strerror(errno));
    return finish(st, &err);
}
