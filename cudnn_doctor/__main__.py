from cudnn_doctor.cli import main

main()
