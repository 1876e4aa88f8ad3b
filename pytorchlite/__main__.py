"""`python -m pytorchlite`: the environment report (the same as `python -m pytorchlite.env`)."""

from pytorchlite.env import main

main()
