from .cli import main
from .errors import program_name

main(prog_name=program_name())
