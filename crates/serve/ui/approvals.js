/* placeholder: the console's approvals.js */
