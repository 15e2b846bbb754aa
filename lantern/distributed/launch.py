"""`python -m lantern.distributed.launch`: torch.distributed.launch, the launcher torchrun replaced (deprecated in
torch, and here: it warns so). It takes torchrun's arguments plus --use-env; without --use-env each rank's program
also gets `--local-rank=<its local rank>`, which scripts of that time read with argparse.

    python -m lantern.distributed.launch --nproc_per_node 2 train.py        # train.py gets --local-rank=0 / 1

>>> args = parse_args(["--nproc-per-node", "2", "train.py", "--lr", "1"])
>>> config_from_args(args)[2]
['-u', 'train.py', '--local-rank=${local_rank}', '--lr', '1']
"""
import sys
import warnings

from .run import config_from_args, exit_status, get_args_parser, run

__all__ = ["parse_args", "launch", "main"]

DEPRECATION = ("The module torch.distributed.launch is deprecated\nand will be removed in future. Use torchrun.\n"
               "Note that --use-env is set by default in torchrun.\nIf your script expects `--local-rank` argument "
               "to be set, please\nchange it to read from `os.environ['LOCAL_RANK']` instead. See \n"
               "https://pytorch.org/docs/stable/distributed.html#launch-utility for \nfurther instructions\n")


def parse_args(args):
    """torchrun's arguments and --use-env (pass the local rank in LOCAL_RANK only, not as --local-rank)."""
    parser = get_args_parser()
    parser.add_argument("--use-env", "--use_env", default=False, action="store_true",
                        help="pass the local rank in LOCAL_RANK only, not as a --local-rank argument")
    return parser.parse_args(args)


def launch(args):
    if args.no_python and not args.use_env:
        raise ValueError("When using the '--no-python' flag, you must also set the '--use-env' flag.")
    run(args)


def main(args=None):
    warnings.warn(DEPRECATION, FutureWarning, stacklevel=2)
    return exit_status(launch, parse_args(sys.argv[1:] if args is None else args))


if __name__ == "__main__":
    sys.exit(main())
