# tfm: one plain Makefile. `make` builds ./tfm; see README.md for the rest.
CC       ?= cc
PORTABLE ?= 0
PREFIX   ?= /usr/local
ARCH      = $(if $(filter 1,$(PORTABLE)),-mtune=generic,-march=native)
# The OpenMP build of OpenBLAS, so that our OpenMP loops and sgemm share one
# thread pool (two busy-waiting pools on 2 cores slow each other down), in
# this machine's multiarch folder (x86_64-linux-gnu, aarch64-linux-gnu, ...),
# asked when used: on a fresh machine the compiler comes with the install
# step of `make test`/`make demo`, after this file is read.
MULTIARCH    = $(shell $(CC) -print-multiarch 2>/dev/null)
OMP_BLAS_DIR = /usr/lib/$(MULTIARCH)/openblas-openmp
PKG_CFLAGS   = $(shell pkg-config --cflags openblas libcjson zlib libmicrohttpd 2>/dev/null)
OMP_BLAS_LIBS = -L$(OMP_BLAS_DIR) -Wl,-rpath=$(OMP_BLAS_DIR) -l:libopenblas.so.0
PKG_LIBS     = $(shell pkg-config --libs libcjson zlib libmicrohttpd 2>/dev/null) \
               $(if $(wildcard $(OMP_BLAS_DIR)/libopenblas.so.0),$(OMP_BLAS_LIBS),$(shell pkg-config --libs openblas 2>/dev/null))
WARN     = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes
CFLAGS  ?= -O2 -g
# -fno-math-errno: sqrtf and friends never set errno here (no one reads it),
# so loops that call them can be vectorized.
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(CFLAGS) $(ARCH) $(WARN) -fno-math-errno -fopenmp -MMD -MP $(PKG_CFLAGS) $(ALL_CFLAGS_MPI) $(EXTRA_CFLAGS)
# oneDNN is not linked: nn/gemm_bf16.c loads it (dlopen) when bf16 is asked
# for, so the binary runs without it in fp32. Its header is needed to build.
LDLIBS   = $(PKG_LIBS) -ldl -fopenmp -lm $(LDLIBS_MPI) $(EXTRA_LDFLAGS)

BUILD   ?= build
# One folder per layer (docs/architecture.md, "Source map"); includes name the folder:
# #include "nn/layers.h".
LAYERS   = base nn text dist model decode train serve cli
# `make MPI=1`: data-parallel training under mpirun (dist/dist_mpi.c, Open
# MPI through pkg-config's ompi-c); the default build needs no MPI
# (dist/dist_single.c).
MPI     ?= 0
ifeq ($(MPI),1)
DIST_OFF   = src/dist/dist_single.c
ALL_CFLAGS_MPI = $(shell pkg-config --cflags ompi-c)
LDLIBS_MPI = $(shell pkg-config --libs ompi-c)
else
DIST_OFF   = src/dist/dist_mpi.c
endif
SRC      = $(filter-out $(DIST_OFF),$(foreach d,$(LAYERS),$(wildcard src/$(d)/*.c)))
LIB_OBJ  = $(patsubst src/%.c,$(BUILD)/%.o,$(filter-out src/cli/%,$(SRC)))
CLI_OBJ  = $(patsubst src/%.c,$(BUILD)/%.o,$(wildcard src/cli/*.c))
TEST_OBJ = $(patsubst tests/%.c,$(BUILD)/tests/%.o,$(wildcard tests/*.c))
BIN     ?= tfm

# Build the binary (default).
all: $(BIN)

$(BIN): $(CLI_OBJ) $(LIB_OBJ) $(BUILD)/mpi-$(MPI).stamp
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS)

# Switching MPI=0/1 relinks (the object lists differ by one file).
$(BUILD)/mpi-$(MPI).stamp:
	@mkdir -p $(BUILD) && rm -f $(BUILD)/mpi-*.stamp && touch $@

$(BUILD)/%.o: src/%.c | $(BUILD)/libs-$(MPI).ok
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Isrc -c -o $@ $<

$(BUILD)/tests/%.o: tests/%.c | $(BUILD)/libs-$(MPI).ok
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Isrc -c -o $@ $<

$(BUILD)/run_tests: $(TEST_OBJ) $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# Install the Debian packages the build needs, when pkg-config does not find
# them (apt-get); for `make test` also what the test scripts run (curl,
# python3). `make test` and `make demo` take this step first, so on a fresh
# machine they are the whole set-up; any other build checks once and says
# what is missing, without installing it.
deps:
	@sh scripts/deps.sh $(if $(filter 1,$(MPI)),mpi)
	@$(if $(filter test,$(MAKECMDGOALS)),sh scripts/deps.sh test,:)

# Under `make test` and `make demo` the build's check waits for the install.
$(BUILD)/libs-$(MPI).ok: | $(if $(filter test demo,$(MAKECMDGOALS)),deps)
	@sh scripts/deps.sh --check $(if $(filter 1,$(MPI)),mpi)
	@mkdir -p $(BUILD) && touch $@

# Unpack the shipped Multi30k data (data/*.gz) at first use.
DATA = $(patsubst %.gz,%,$(wildcard data/*.gz))
data: $(DATA)
data/%: data/%.gz
	gzip -dc $< > $@.tmp && mv $@.tmp $@

# The walls between the folders of src/ (scripts/check_walls.sh; docs/architecture.md,
# "Source map"): which way includes point, who may use cJSON and cblas.h,
# who may end the process. Part of `make test`.
walls:
	@bash scripts/check_walls.sh src

# Install what is missing, then run every test; the last line is "N passed, N failed".
test: deps walls $(BIN) $(BUILD)/run_tests $(BUILD)/serve_load data
	@TFM=$(CURDIR)/$(BIN) RUN_TESTS=$(BUILD)/run_tests SERVE_LOAD=$(CURDIR)/$(BUILD)/serve_load \
	    bash tests/run_all.sh

# The suites that train and translate under every OpenBLAS kernel this CPU
# can run (scripts/test_kernels.sh); the last line is "N passed, N failed".
test-kernels: walls $(BIN) $(BUILD)/run_tests data
	@TFM=$(CURDIR)/$(BIN) RUN_TESTS=$(BUILD)/run_tests bash scripts/test_kernels.sh

# The load generator of tests/cli_serve.sh and scripts/bench_serve.sh.
$(BUILD)/serve_load: tests/load/serve_load.c | $(BUILD)/libs-$(MPI).ok
	@mkdir -p $(BUILD)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(PKG_LIBS) -lpthread $(EXTRA_LDFLAGS)

# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer.
# oneDNN is linked at start here, not dlopen'ed at first bf16 use as in the
# product: gcc 12's LeakSanitizer crashes ("Tracer caught signal 11") at exit
# scanning the thread-local storage of a library opened by dlopen. dlopen
# then finds the library already loaded.
DNNL_AT_START = -Wl,--no-as-needed -ldnnl -Wl,--as-needed
ASAN_DNNL = $(if $(wildcard /usr/lib/$(MULTIARCH)/libdnnl.so),$(DNNL_AT_START))
asan:
	$(MAKE) BUILD=build-asan BIN=build-asan/tfm \
	    CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    EXTRA_LDFLAGS="-fsanitize=address,undefined $(ASAN_DNNL)" test

# Memcheck of a short train, translate, bleu, bpe and info (valgrind), on a
# PORTABLE build: valgrind 3.19 does not know AVX-512, which -march=native
# emits on such a CPU.
valgrind:
	$(MAKE) BUILD=build-vg BIN=build-vg/tfm PORTABLE=1 build-vg/tfm
	TFM=$(CURDIR)/build-vg/tfm bash scripts/valgrind.sh

# libFuzzer targets (tests/fuzz/) under ASan and UBSan, SECONDS each (clang).
SECONDS ?= 60
fuzz:
	bash scripts/fuzz.sh $(SECONDS)
lib-objs: $(LIB_OBJ)
print-lib-objs:
	@echo $(LIB_OBJ)
print-ldlibs:
	@echo $(LDLIBS)

# Train configs/tiny.json on Multi30k and translate a few test sentences.
demo: deps
	$(MAKE) $(BIN) data
	bash scripts/demo.sh

# Speed benchmarks (minutes): see BENCHMARKS.md.
bench: $(BIN) data
	bash scripts/bench_train.sh

# The decoder-step product: packed-weight kernel vs sgemm (BENCHMARKS.md).
THREADS ?= 1
bench-kernel: $(BIN)
	$(CC) $(ALL_CFLAGS) -Isrc -o $(BUILD)/bench_packed_linear scripts/bench_packed_linear.c \
	    $(LIB_OBJ) $(LDLIBS)
	$(BUILD)/bench_packed_linear $(THREADS)

# Softmax against linear attention as the length grows (BENCHMARKS.md).
bench-attention: $(BIN)
	$(CC) $(ALL_CFLAGS) -Isrc -o $(BUILD)/bench_attention scripts/bench_attention.c \
	    $(LIB_OBJ) $(LDLIBS)
	bash scripts/bench_attention.sh $(BUILD)/bench_attention

# Regenerate the PyTorch reference dump and compare (needs python3-torch).
check-torch: $(BIN) $(BUILD)/run_tests
	/usr/bin/python3 scripts/make_ref.py tests/data/ref_tiny.bin
	$(BUILD)/run_tests ref

# Static checks.
lint:
	cppcheck --quiet --enable=warning,performance,portability --std=c11 -Isrc src

# Install the binary under PREFIX.
install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/tfm

# Remove build outputs.
clean:
	rm -rf build build-asan build-vg build-fuzz tfm

.PHONY: all deps data walls test test-kernels asan valgrind fuzz lib-objs print-lib-objs print-ldlibs demo bench bench-kernel bench-attention check-torch lint install clean
-include $(wildcard $(BUILD)/*/*.d)
