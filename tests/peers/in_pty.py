"""Run a command in a pseudo-terminal and print everything it wrote there (stdout and stderr
both go to the terminal). Usage: in_pty.py COMMAND ARGS..."""

import os
import pty
import sys

seen = bytearray()


def read(fd):
    data = os.read(fd, 4096)
    seen.extend(data)
    return b""  # not echoed: printed once at the end


def no_input(fd):
    return b""


os.environ["TERM"] = "xterm"
os.environ.pop("NO_COLOR", None)
status = pty.spawn(sys.argv[1:], read, no_input)
sys.stdout.buffer.write(bytes(seen))
sys.exit(os.waitstatus_to_exitcode(status))
