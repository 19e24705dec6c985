from cudnn_doctor.entry import main

main()
