// gloo_allreduce — the Gloo baseline (PyTorch's CPU backend) for symbench
// allreduce: Gloo's ring and halving-doubling all-reduce on fp32, over its TCP
// transport on loopback, printing symbench's table shape. Started by symrun,
// which gives each process SYMTRAIN_RANK and SYMTRAIN_SIZE (it does not call
// shmem_init); ranks meet through a file store in a temporary directory. Each
// row is the best of 3 timed passes, as symbench and mpi_coll print.
//
//   symrun -n 2 ./gloo_allreduce ring|hd STORE_DIR [max_bytes]
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

static int iters_for(size_t bytes) {
    if (bytes <= 65536) return 500;
    if (bytes <= (1 << 20)) return 100;
    if (bytes <= (16 << 20)) return 20;
    return 4;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: gloo_allreduce ring|hd STORE_DIR [max_bytes]\n");
        return 2;
    }
    const char *r = std::getenv("SYMTRAIN_RANK"), *s = std::getenv("SYMTRAIN_SIZE");
    if (!r || !s) {
        std::fprintf(stderr, "gloo_allreduce: start it with symrun -n N\n");
        return 2;
    }
    int rank = std::atoi(r), size = std::atoi(s);
    bool hd = std::strcmp(argv[1], "hd") == 0;
    size_t maxb = argc > 3 ? std::strtoull(argv[3], nullptr, 0) : (size_t)256 << 20;

    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(argv[2]);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ctx->connectFullMesh(store, dev);

    std::vector<float> buf(maxb / 4);
    for (size_t i = 0; i < buf.size(); i++) buf[i] = (float)(i % 13);
    if (rank == 0)
        std::printf("# Gloo allreduce (%s), %d ranks, fp32\n# %12s %12s %10s %10s\n",
                    hd ? "halving-doubling" : "ring", size, "bytes", "time_us", "algbw_GBs",
                    "busbw_GBs");
    for (size_t bytes = 8; bytes <= maxb; bytes *= 2) {
        int count = (int)(bytes / 4);
        std::vector<float *> ptrs{buf.data()};
        std::unique_ptr<gloo::Algorithm> alg;
        if (hd)
            alg.reset(new gloo::AllreduceHalvingDoubling<float>(ctx, ptrs, count));
        else
            alg.reset(new gloo::AllreduceRing<float>(ctx, ptrs, count));
        gloo::BarrierAllToAll barrier(ctx);
        for (int i = 0; i < 3; i++) alg->run();
        int iters = iters_for(bytes);
        double t = 1e30;
        for (int rep = 0; rep < 3; rep++) { // the barriers make it the slowest rank's time
            barrier.run();
            auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < iters; i++) alg->run();
            barrier.run();
            double ti = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (ti / iters < t) t = ti / iters;
        }
        double algbw = (double)bytes / t / 1e9;
        if (rank == 0)
            std::printf("  %12zu %12.2f %10.3f %10.3f\n", bytes, t * 1e6, algbw,
                        algbw * 2.0 * (size - 1) / size);
    }
    return 0;
}
