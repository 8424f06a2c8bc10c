       IDENTIFICATION DIVISION.
       PROGRAM-ID. REPORT.
      * needle in a COBOL comment
       PROCEDURE DIVISION.
           DISPLAY 'needle'.
           STOP RUN.
