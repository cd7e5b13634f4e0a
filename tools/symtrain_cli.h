/*
 * symtrain_cli.h — the subcommands of the symtrain CLI that live in their own
 * files (tools/symtrain_*.c), for tools/symtrain.c to dispatch to.
 *
 * Each takes the arguments after its name (argv[0] is the first of them, as
 * `symtrain tokenize a.txt -o d` passes argc 3, {"a.txt", "-o", "d"}) and
 * returns the process's exit status: 0 done, 1 failed (the message is on
 * stderr), 2 bad usage. --help prints the usage on stdout and returns 0.
 */
#ifndef SYMTRAIN_CLI_H
#define SYMTRAIN_CLI_H

/* symtrain tokenize FILES... -o DIR [--val-fraction F] [--shard-tokens N] */
int sym_cli_tokenize(int argc, char **argv);
/* symtrain sample --ckpt DIR [--prompt TEXT] [--max-new-tokens N] ... */
int sym_cli_sample(int argc, char **argv);
/* symtrain plan --model gpt:SPEC --pes N [--device-mem SIZE] ... (symtrain_plan.c) */
int sym_cli_plan(int argc, char **argv);
/* symtrain ckpt show|verify DIR */
int sym_cli_ckpt(int argc, char **argv);
/* symtrain memstore SOCKET (symtrain_memstore.c) */
int sym_cli_memstore(int argc, char **argv);

#endif
