import os

from .cli import main
from .errors import COMMAND_ENV

main(prog_name=os.environ.get(COMMAND_ENV) or "semantic-skills")
