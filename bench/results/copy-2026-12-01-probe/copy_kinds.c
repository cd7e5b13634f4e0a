/* copy_kinds.c: one process, glibc memcpy, rep movsb, streaming-store loops (SSE2, AVX2, AVX2 with
 * prefetch) and AVX2 plain stores, cached (one slice) or streaming (slices of 256 MiB), best of 5
 * alternating rounds. gcc -O2 copy_kinds.c -o copy_kinds; taskset -c 1 ./copy_kinds OFFSET STREAM
 * (OFFSET: bytes into a page for the destination; STREAM 0 or 1). Output: copy_kinds.txt. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void c_glibc(void*d,const void*s,size_t n){memcpy(d,s,n);}
static void c_movsb(void*d,const void*s,size_t n){__asm__ volatile("rep movsb":"+D"(d),"+S"(s),"+c"(n)::"memory");}
static void c_nt128(void *dst,const void*src,size_t n){char*d=dst;const char*s=src;size_t head=(64-((uintptr_t)d&63))&63;if(head>n)head=n;memcpy(d,s,head);d+=head,s+=head,n-=head;
 for(;n>=64;n-=64,d+=64,s+=64){__m128i a=_mm_loadu_si128((const __m128i*)s),b=_mm_loadu_si128((const __m128i*)(s+16)),c=_mm_loadu_si128((const __m128i*)(s+32)),e=_mm_loadu_si128((const __m128i*)(s+48));
 _mm_stream_si128((__m128i*)d,a);_mm_stream_si128((__m128i*)(d+16),b);_mm_stream_si128((__m128i*)(d+32),c);_mm_stream_si128((__m128i*)(d+48),e);}_mm_sfence();memcpy(d,s,n);}
__attribute__((target("avx2")))
static void c_nt256(void *dst,const void*src,size_t n){char*d=dst;const char*s=src;size_t head=(64-((uintptr_t)d&63))&63;if(head>n)head=n;memcpy(d,s,head);d+=head,s+=head,n-=head;
 for(;n>=128;n-=128,d+=128,s+=128){__m256i a=_mm256_loadu_si256((const __m256i*)s),b=_mm256_loadu_si256((const __m256i*)(s+32)),c=_mm256_loadu_si256((const __m256i*)(s+64)),e=_mm256_loadu_si256((const __m256i*)(s+96));
 _mm256_stream_si256((__m256i*)d,a);_mm256_stream_si256((__m256i*)(d+32),b);_mm256_stream_si256((__m256i*)(d+64),c);_mm256_stream_si256((__m256i*)(d+96),e);}_mm_sfence();memcpy(d,s,n);}
__attribute__((target("avx2")))
static void c_nt256p(void *dst,const void*src,size_t n){char*d=dst;const char*s=src;size_t head=(64-((uintptr_t)d&63))&63;if(head>n)head=n;memcpy(d,s,head);d+=head,s+=head,n-=head;
 for(;n>=128;n-=128,d+=128,s+=128){_mm_prefetch(s+1024,_MM_HINT_T0);_mm_prefetch(s+1088,_MM_HINT_T0);__m256i a=_mm256_loadu_si256((const __m256i*)s),b=_mm256_loadu_si256((const __m256i*)(s+32)),c=_mm256_loadu_si256((const __m256i*)(s+64)),e=_mm256_loadu_si256((const __m256i*)(s+96));
 _mm256_stream_si256((__m256i*)d,a);_mm256_stream_si256((__m256i*)(d+32),b);_mm256_stream_si256((__m256i*)(d+64),c);_mm256_stream_si256((__m256i*)(d+96),e);}_mm_sfence();memcpy(d,s,n);}
__attribute__((target("avx2")))
static void c_v256(void *dst,const void*src,size_t n){char*d=dst;const char*s=src;size_t head=(64-((uintptr_t)d&63))&63;if(head>n)head=n;memcpy(d,s,head);d+=head,s+=head,n-=head;
 for(;n>=128;n-=128,d+=128,s+=128){__m256i a=_mm256_loadu_si256((const __m256i*)s),b=_mm256_loadu_si256((const __m256i*)(s+32)),c=_mm256_loadu_si256((const __m256i*)(s+64)),e=_mm256_loadu_si256((const __m256i*)(s+96));
 _mm256_store_si256((__m256i*)d,a);_mm256_store_si256((__m256i*)(d+32),b);_mm256_store_si256((__m256i*)(d+64),c);_mm256_store_si256((__m256i*)(d+96),e);}memcpy(d,s,n);}
typedef void(*fn)(void*,const void*,size_t);
static struct{const char*name;fn f;} M[]={{"glibc",c_glibc},{"movsb",c_movsb},{"nt128",c_nt128},{"nt256",c_nt256},{"nt256p",c_nt256p},{"v256",c_v256}};
int main(int argc,char**argv){
 size_t span=(size_t)256<<20; size_t off=argc>1?strtoul(argv[1],0,0):0; int stream=argc>2?atoi(argv[2]):0;
 char*src=aligned_alloc(4096,span); int fd=syscall(SYS_memfd_create,"x",0); ftruncate(fd,span+8192);
 char*dst=mmap(0,span+8192,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0); memset(src,1,span); memset(dst,2,span+8192); dst+=off;
 int nm=sizeof M/sizeof*M;
 printf("# off %zu stream %d: ns per copy, best of 5 alternating rounds; GB/s\n%-8s",off,stream,"size");
 for(int m=0;m<nm;m++)printf(" %10s",M[m].name); printf("\n");
 for(size_t sz=4096;sz<=((size_t)8<<20);sz*=2){
  double best[16];for(int m=0;m<nm;m++)best[m]=1e9;
  long iters=(long)((64<<20)/sz); if(iters>20000)iters=20000; if(iters<20)iters=20;
  size_t nsl=stream?span/sz:1;
  for(int r=0;r<5;r++)for(int m=0;m<nm;m++){
   for(long i=0;i<iters/4+1;i++)M[m].f(dst+(i%nsl)*sz,src+(i%nsl)*sz,sz);
   double t=now(); for(long i=0;i<iters;i++)M[m].f(dst+(i%nsl)*sz,src+(i%nsl)*sz,sz); t=(now()-t)/iters; if(t<best[m])best[m]=t;}
  printf("%-8zu",sz); for(int m=0;m<nm;m++)printf(" %10.0f",best[m]*1e9); printf("   |"); for(int m=0;m<nm;m++)printf(" %5.1f",sz/best[m]/1e9); printf("\n"); fflush(stdout);}
 return 0;}
