"""Skills learned from runs that worked (the Voyager idea): a run's successful commands and the
scripts it wrote and ran, generalized into named parameters, proposed to the run's user as a
skill, installed only when they accept it.

- :mod:`.trace`: the steps of a run's last turn that worked (bash commands, scripts written and run);
- :mod:`.values`: the values of the request (paths, file names, numbers, quoted words) that become parameters;
- :mod:`.generalize`: those values replaced by parameters in the commands and scripts;
- :mod:`.guard`: secrets taken out, and a draft refused that names a path outside the virtual folders;
- :mod:`.draft`: the proposal as a skill folder (SKILL.md and scripts);
- :mod:`.store`: proposals per user, listed, accepted (installed as the user's own skill) or declined.

Nothing here calls a model: a small model follows the SKILL.md it writes (set the parameters,
run the block), and drafting after a run never holds the model the user's next message needs.
"""
