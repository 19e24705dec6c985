try:
    from cudnn_doctor.entry import command
except KeyboardInterrupt:  # Ctrl-C while entry loads, before its handlers: 130, as every command ends on SIGINT
    raise SystemExit(130) from None

command()
