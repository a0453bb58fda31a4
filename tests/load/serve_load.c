/* serve_load: a small load generator for `tfm serve` (tests and
 * scripts/bench_serve.sh). C clients, each on its own keep-alive
 * connection, send the lines of INPUT as single-line requests
 * {"text": "line"}, taking the next line from a shared counter, once each
 * (or round and round for -d SECONDS), and time each request.
 *
 *   serve_load -p PORT -i INPUT [-c CLIENTS] [-d SECONDS] [-o OUT]
 *              [-e EXPECTED] [-H HOST] [-b BEAM]
 *
 * -b adds "beam": BEAM to each request. -o writes each line's translation, in input order (once-through mode).
 * -e checks every 200 answer against the expected translations (a line
 * each). Prints one summary line:
 *   requests N ok N wrong N refused N failed N http503 N other N
 *   seconds S sent/s R p50_ms A p95_ms B p99_ms C
 * "refused": the connection was refused or reset before any byte of an
 * answer (a server that stopped accepting); "failed": an answer cut short.
 * Exits 0 when no answer was wrong or cut short. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>

static const char *host = "127.0.0.1";
static int port, clients = 1, beam;
static double duration;
static char **lines, **expected, **answers;
static int n_lines;
static atomic_long next_line;
static atomic_long n_req, n_ok, n_wrong, n_refused, n_failed, n_503, n_other;
static double start_s;
static double *lat;             /* ms per request, up to lat_cap */
static atomic_long n_lat;
static long lat_cap;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char **read_lines(const char *path, int *n)
{
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); exit(2); }
    char **v = NULL;
    int cap = 0, k = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        if (len && line[len - 1] == '\n') line[--len] = '\0';
        if (k == cap) v = realloc(v, sizeof *v * (size_t)(cap = cap ? 2 * cap : 256));
        v[k++] = strdup(line);
    }
    free(line);
    fclose(f);
    *n = k;
    return v;
}

static int connect_server(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One request; returns the status (0: no answer at all, -1: cut short)
 * with the body in *body. *close_after: the server closes after it. */
static int request(int fd, const char *req, size_t req_len, char **body, size_t *body_cap,
                   bool *close_after)
{
    if (write_all(fd, req, req_len) != 0) return 0;
    static __thread char hdr[8192];
    size_t got = 0;
    char *end = NULL;
    while (!end) {
        if (got == sizeof hdr - 1) return -1;
        ssize_t r = recv(fd, hdr + got, sizeof hdr - 1 - got, 0);
        if (r <= 0) return got ? -1 : 0;
        got += (size_t)r;
        hdr[got] = '\0';
        end = strstr(hdr, "\r\n\r\n");
    }
    int status = atoi(hdr + 9);
    const char *cl = strcasestr(hdr, "\r\nContent-Length:");
    size_t len = cl ? strtoul(cl + 17, NULL, 10) : 0;
    *close_after = strcasestr(hdr, "\r\nConnection: close") != NULL;
    if (len + 1 > *body_cap) *body = realloc(*body, *body_cap = len + 1);
    size_t have = got - (size_t)(end + 4 - hdr);
    if (have > len) have = len;
    memcpy(*body, end + 4, have);
    while (have < len) {
        ssize_t r = recv(fd, *body + have, len - have, 0);
        if (r <= 0) return -1;
        have += (size_t)r;
    }
    (*body)[len] = '\0';
    return status;
}

static void *client(void *arg)
{
    (void)arg;
    int fd = -1;
    char *body = NULL, *req = NULL;
    size_t body_cap = 0, req_cap = 0;
    for (;;) {
        long i = atomic_fetch_add(&next_line, 1);
        if (duration > 0) {
            if (now_s() - start_s >= duration) break;
            i %= n_lines;
        } else if (i >= n_lines) {
            break;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "text", lines[i]);
        if (beam) cJSON_AddNumberToObject(o, "beam", beam);
        char *json = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        size_t jl = strlen(json);
        if (req_cap < jl + 256) req = realloc(req, req_cap = jl + 256);
        int rl = snprintf(req, req_cap, "POST /translate HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                          "application/json\r\nContent-Length: %zu\r\n\r\n%s", host, jl, json);
        free(json);
        double t0 = now_s();
        bool close_after = false;
        int status = 0;
        for (int attempt = 0; attempt < 2; attempt++) {
            if (fd < 0 && (fd = connect_server()) < 0) break;
            status = request(fd, req, (size_t)rl, &body, &body_cap, &close_after);
            if (status != 0 || attempt == 1) break;
            /* a kept-alive connection the server had closed: once more on a new one */
            close(fd);
            fd = -1;
        }
        double ms = (now_s() - t0) * 1e3;
        atomic_fetch_add(&n_req, 1);
        if (status == 0) {
            atomic_fetch_add(&n_refused, 1);
        } else if (status < 0) {
            atomic_fetch_add(&n_failed, 1);
            fprintf(stderr, "serve_load: line %ld: answer cut short\n", i + 1);
        } else if (status == 200) {
            cJSON *r = cJSON_Parse(body);
            cJSON *t = r ? cJSON_GetObjectItem(r, "translations") : NULL;
            cJSON *s = t ? cJSON_GetArrayItem(t, 0) : NULL;
            const char *text = s && cJSON_IsString(s) ? s->valuestring : NULL;
            if (!text || (expected && (i >= 0 && strcmp(text, expected[i % n_lines]) != 0))) {
                atomic_fetch_add(&n_wrong, 1);
                fprintf(stderr, "serve_load: line %ld: got %.200s\n", i + 1, body);
            } else {
                atomic_fetch_add(&n_ok, 1);
                if (answers && !answers[i]) answers[i] = strdup(text);
            }
            cJSON_Delete(r);
            long k = atomic_fetch_add(&n_lat, 1);
            if (k < lat_cap) lat[k] = ms;
        } else if (status == 503) {
            atomic_fetch_add(&n_503, 1);
        } else {
            atomic_fetch_add(&n_other, 1);
            fprintf(stderr, "serve_load: line %ld: status %d %.200s\n", i + 1, status, body);
        }
        if (status <= 0 || close_after) {
            if (fd >= 0) close(fd);
            fd = -1;
        }
        if (status == 0 && duration > 0) usleep(10000);
    }
    if (fd >= 0) close(fd);
    free(body);
    free(req);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, long n, double p)
{
    if (n == 0) return 0;
    long k = (long)(p * (double)(n - 1) + 0.5);
    return v[k];
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *exp = NULL;
    int c;
    while ((c = getopt(argc, argv, "p:i:c:d:o:e:H:b:")) != -1) {
        switch (c) {
        case 'p': port = atoi(optarg); break;
        case 'i': in = optarg; break;
        case 'c': clients = atoi(optarg); break;
        case 'd': duration = atof(optarg); break;
        case 'o': out = optarg; break;
        case 'e': exp = optarg; break;
        case 'H': host = optarg; break;
        case 'b': beam = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: serve_load -p PORT -i INPUT [-c CLIENTS] [-d SECONDS] [-o OUT] "
                            "[-e EXPECTED] [-H HOST] [-b BEAM]\n");
            return 2;
        }
    }
    if (!port || !in || clients < 1) {
        fprintf(stderr, "serve_load: -p PORT and -i INPUT are needed\n");
        return 2;
    }
    lines = read_lines(in, &n_lines);
    if (n_lines == 0) return 2;
    if (exp) {
        int n;
        expected = read_lines(exp, &n);
        if (n != n_lines) {
            fprintf(stderr, "serve_load: %s has %d lines, %s %d\n", exp, n, in, n_lines);
            return 2;
        }
    }
    if (out) answers = calloc((size_t)n_lines, sizeof *answers);
    lat_cap = duration > 0 ? 10000000 : n_lines;
    lat = malloc(sizeof *lat * (size_t)lat_cap);
    pthread_t *th = malloc(sizeof *th * (size_t)clients);
    start_s = now_s();
    for (int i = 0; i < clients; i++) pthread_create(&th[i], NULL, client, NULL);
    for (int i = 0; i < clients; i++) pthread_join(th[i], NULL);
    free(th);
    double secs = now_s() - start_s;
    long nl = atomic_load(&n_lat);
    if (nl > lat_cap) nl = lat_cap;
    qsort(lat, (size_t)nl, sizeof *lat, cmp_double);
    printf("requests %ld ok %ld wrong %ld refused %ld failed %ld http503 %ld other %ld seconds %.2f "
           "sent/s %.1f p50_ms %.2f p95_ms %.2f p99_ms %.2f\n",
           atomic_load(&n_req), atomic_load(&n_ok), atomic_load(&n_wrong), atomic_load(&n_refused),
           atomic_load(&n_failed), atomic_load(&n_503), atomic_load(&n_other), secs,
           (double)atomic_load(&n_ok) / secs, pct(lat, nl, 0.5), pct(lat, nl, 0.95),
           pct(lat, nl, 0.99));
    if (out) {
        FILE *f = fopen(out, "w");
        for (int i = 0; f && i < n_lines; i++) fprintf(f, "%s\n", answers[i] ? answers[i] : "<none>");
        if (f) fclose(f);
    }
    return atomic_load(&n_wrong) || atomic_load(&n_failed) ? 1 : 0;
}
