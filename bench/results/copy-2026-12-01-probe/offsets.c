/* offsets.c: glibc memcpy at destination offsets 0, 64, 208, 2048 into a page. gcc -O2 offsets.c
 * -o offsets; taskset -c 1 ./offsets STREAM (0 or 1). Output: offsets.txt. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
 size_t span=(size_t)256<<20; int stream=atoi(argv[1]); size_t offs[]={0,64,208,2048};int no=4;
 char*src=aligned_alloc(4096,span); int fd=syscall(SYS_memfd_create,"x",0); ftruncate(fd,span+8192);
 char*dst=mmap(0,span+8192,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0); memset(src,1,span); memset(dst,2,span+8192);
 printf("# glibc memcpy, stream %d, us per copy best of 7 alternating; dst offsets",stream); for(int o=0;o<no;o++)printf(" %zu",offs[o]); printf("\n");
 for(size_t sz=32768;sz<=((size_t)4<<20);sz*=2){
  double best[8];for(int m=0;m<no;m++)best[m]=1e9;
  long iters=(long)((32<<20)/sz); if(iters<20)iters=20; size_t nsl=stream?span/sz-1:1;
  for(int r=0;r<7;r++)for(int m=0;m<no;m++){char*d=dst+offs[m];
   double t=now(); for(long i=0;i<iters;i++)memcpy(d+(i%nsl)*sz,src+(i%nsl)*sz,sz); t=(now()-t)/iters; if(t<best[m])best[m]=t;}
  printf("%-8zu",sz); for(int m=0;m<no;m++)printf(" %9.1f",best[m]*1e6); printf("\n"); fflush(stdout);}
 return 0;}
