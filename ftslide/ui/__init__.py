"""Terminal and file output shared by the commands: tables, progress, whole-or-nothing files and figures."""
