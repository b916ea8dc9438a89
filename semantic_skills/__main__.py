from .cli import main
from .errors import command_name

main(prog_name=command_name())
